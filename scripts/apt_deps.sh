#!/usr/bin/env bash
# apt_deps.sh PACKAGE... — install the Debian packages that are missing (root), or say which.
# Used by .ci/run (test dependencies) and `make bench` (benchmark dependencies).
set -euo pipefail
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
if ((EUID != 0)); then
    echo "apt_deps: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "apt_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
