#!/usr/bin/env bash
# build_dist.sh - dist/edgeprint: one self-contained file for the venue mini-PC (make dist).
#
# A zipapp built with shiv: edgeprint and every dependency (binary wheels for
# CPython 3.11 on Linux x86-64) in one executable file that runs on a fresh
# Debian 12 with only its system python3 (3.11). Native modules are unpacked
# once into $SHIV_ROOT (default ~/.shiv; the systemd unit points it at
# /var/cache/edgeprint). The shebang is Debian's /usr/bin/python3 (SHEBANG= to
# change it): the bundled wheels are built for CPython 3.11, so a virtual
# environment's or pyenv's python3 first on the PATH must not be the one that
# runs it. Why shiv and not PyInstaller: Debian 12 always has
# python3, the file stays ~6 MB instead of ~25 MB, start-up after the first
# run is as fast as the package, and nothing is frozen against a libc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-dist/edgeprint}
SHEBANG=${SHEBANG:-/usr/bin/python3}

# After the quick start .venv has edgeprint but not the dist extra: bring shiv in.
if ! "$PY" -m shiv --version >/dev/null 2>&1; then
    echo "build_dist: installing shiv into $("$PY" -c 'import sys; print(sys.prefix)')"
    "$PY" -m pip install --quiet --disable-pip-version-check 'shiv>=1.0.8'
fi

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit+dirty"; fi
build=edgeprint/_build.py
trap 'rm -f "$build"' EXIT
printf '"""Written by scripts/build_dist.sh; not in git."""\n\nCOMMIT = "%s"\n' "$commit" >"$build"

mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
# pip builds in ./build/lib and copies over what is there: a module since moved or deleted
# (edgeprint/cli/main.py) would ride along in the zipapp and could shadow an entry point.
rm -rf build/lib
"$PY" -m shiv --compressed --reproducible -p "$SHEBANG" -c edgeprint -o "$OUT" . \
    --disable-pip-version-check --quiet
size=$(stat -c %s "$OUT")
echo "built $OUT ($((size / 1024)) KiB, commit $commit)"
