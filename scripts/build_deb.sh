#!/usr/bin/env bash
# build_deb.sh - dist/edgeprint_<version>_<arch>.deb with Debian's own dpkg-deb (make deb).
#
# The package holds the single-file build (make dist) as /usr/lib/edgeprint/edgeprint,
# run by the wrapper /usr/bin/edgeprint (packaging/deb/edgeprint.sh: SHIV_ROOT in the
# package's cache, so no run leaves ~/.shiv behind), the systemd unit, an unconfigured
# /etc/edgeprint/config.toml (a conffile, 0640 root:edgeprint once postinst has made the
# group), and the docs. Its maintainer scripts (packaging/deb/) make the edgeprint system
# user, /var/lib/edgeprint and /var/cache/edgeprint/shiv (where the single file unpacks);
# remove deletes that cache and says what it keeps, purge deletes everything; nothing is
# enabled or started. Architecture: the build
# machine's (dpkg --print-architecture), not "all": the single file bundles
# CPython 3.11 binary wheels (pydantic-core, aiohttp, …) for this architecture,
# which is also why it depends on python3 3.11 exactly.
#
# Environment: SKIP_DIST=1 reuses dist/edgeprint; LINTIAN=0 skips the lintian check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for tool in dpkg-deb dpkg; do
    if ! command -v "$tool" >/dev/null; then
        echo "build_deb: $tool is missing (apt-get install dpkg)" >&2
        exit 1
    fi
done

upstream=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
version="${upstream}-1"
arch=$(dpkg --print-architecture)
out="dist/edgeprint_${version}_${arch}.deb"
# Reproducible: the dates inside come from the last commit.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

if [ "${SKIP_DIST:-0}" != 1 ] || [ ! -f dist/edgeprint ]; then
    bash scripts/build_dist.sh
fi

root=build/deb/root
rm -rf build/deb
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/edgeprint" "$root/lib/systemd/system" \
    "$root/etc/edgeprint" \
    "$root/usr/share/doc/edgeprint/examples" "$root/usr/share/man/man1"

install -m 0755 dist/edgeprint "$root/usr/lib/edgeprint/edgeprint"
install -m 0755 packaging/deb/edgeprint.sh "$root/usr/bin/edgeprint"
install -m 0644 systemd/edgeprint.service "$root/lib/systemd/system/edgeprint.service"
# 0644 here (it holds no secret yet); postinst makes it 0640 root:edgeprint.
install -m 0644 packaging/deb/config.toml "$root/etc/edgeprint/config.toml"
gzip -9n <packaging/deb/edgeprint.1 >"$root/usr/share/man/man1/edgeprint.1.gz"
chmod 0644 "$root/usr/share/man/man1/edgeprint.1.gz"
install -m 0644 README.md SECURITY.md docs/RUNBOOK.md "$root/usr/share/doc/edgeprint/"
install -m 0644 config.example.toml "$root/usr/share/doc/edgeprint/examples/"
for script in postinst prerm postrm; do
    install -m 0755 "packaging/deb/$script" "$root/DEBIAN/$script"
done
echo /etc/edgeprint/config.toml >"$root/DEBIAN/conffiles"

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
date_r=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
maintainer="edgeprint maintainers <edgeprint@example.com>"
{
    echo "edgeprint ($version) unstable; urgency=medium"
    echo
    echo "  * Built from commit $commit."
    echo
    echo " -- $maintainer  $date_r"
} | gzip -9n >"$root/usr/share/doc/edgeprint/changelog.Debian.gz"

# The copyright file names every distribution bundled in the single file, from its metadata.
{
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: edgeprint
Comment: /usr/lib/edgeprint/edgeprint is a zipapp (shiv) that bundles the Python
 distributions listed under "Files: usr/lib/edgeprint/edgeprint", each under its own
 license as declared in its metadata (the .dist-info folder inside the file).

Files: *
Copyright: 2026 edgeprint maintainers
License: proprietary
 All rights reserved. Not for redistribution outside the organisation that
 received it.

Files: usr/lib/edgeprint/edgeprint
Copyright: the authors of each bundled distribution
License: bundled
EOF
    python3 - dist/edgeprint <<'PY'
import email.parser, re, sys, zipfile
rows = []
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if re.fullmatch(r"site-packages/[^/]+\.dist-info/METADATA", name):
            meta = email.parser.Parser().parsestr(z.read(name).decode("utf-8", "replace"))
            lic = meta.get("License-Expression") or (meta.get("License") or "").splitlines()[0:1]
            if isinstance(lic, list):
                lic = lic[0] if lic else ""
            classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or []
                           if c.startswith("License ::")]
            lic = (lic or ", ".join(classifiers) or "see its metadata").strip()[:60]
            rows.append(f" {meta['Name']} {meta['Version']}: {lic}")
print("\n".join(sorted(rows, key=str.lower)))
PY
} >"$root/usr/share/doc/edgeprint/copyright"
chmod 0644 "$root/usr/share/doc/edgeprint/copyright"

installed_kib=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: edgeprint
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: python3 (>= 3.11), python3 (<< 3.12), adduser
Section: net
Priority: optional
Description: print-job appliance for event venues: exactly-once printing over IPP
 edgeprint takes rendered PDFs (badges, student documents) from check-in
 kiosks and release stations over a small HTTP API, keeps every job in
 SQLite and prints each accepted job exactly once on the venue's IPP
 printers, moving work to a healthy peer when a printer jams or dies.
 .
 After installing: edgeprint setup, then systemctl enable --now edgeprint.
EOF

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z \
    | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control" "$root/DEBIAN/conffiles"
find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p dist
rm -f dist/edgeprint_*.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "built $out ($(($(stat -c %s "$out") / 1024)) KiB)"

if [ "${LINTIAN:-1}" != 0 ]; then
    if command -v lintian >/dev/null; then
        # Errors fail the build; warnings and notes are shown.
        lintian --fail-on error "$out"
    else
        echo "build_deb: lintian not installed (apt-get install lintian): not checked" >&2
    fi
fi
