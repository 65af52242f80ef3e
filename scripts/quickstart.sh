#!/usr/bin/env bash
# quickstart.sh - edgeprint on this machine in one command, with two local IPP printers.
#
#   bash scripts/quickstart.sh        (fresh Debian 12, as root, from the project folder)
#
# 1. installs the Debian packages it needs, only those that are missing
#    (python3 python3-venv cups-ipp-utils dbus-daemon curl make);
# 2. creates .venv and installs edgeprint with its test extras (again only when
#    pyproject.toml changed since the last run);
# 3. starts two real IPP Everywhere printers (ippeveprinter, via testbed/rig.py)
#    on free loopback ports, folder .quickstart/rig;
# 4. writes .quickstart/config.toml: API on https://127.0.0.1:8631 (tls = "self-signed":
#    the key and certificate in .quickstart/tls.key and tls.crt, kept across runs), data in
#    .quickstart/data, printer-01 and printer-02 in pool "lobby", a kiosk and a
#    tech token (plain tokens in .quickstart/tokens.env, kept across runs);
# 5. prints what clients pin, curl examples (--cacert .quickstart/tls.crt) and runs
#    `edgeprint serve` in the foreground.
#    Ctrl-C (or SIGTERM) stops the appliance, then the printers.
#
# Safe to run again: packages, venv and tokens are reused; printers left over
# from an earlier run are stopped and started afresh; the config is rewritten.
#
# Environment: PYTHON (default python3), QUICKSTART_PORT (default 8631).

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
QS=.quickstart
RIG_DIR=$QS/rig
CONFIG=$QS/config.toml
PYTHON=${PYTHON:-python3}
PORT=${QUICKSTART_PORT:-8631}
VENV_PY=.venv/bin/python

if [ -t 1 ]; then
    say() { printf '\033[1mquickstart:\033[0m %s\n' "$*"; }
else
    say() { printf 'quickstart: %s\n' "$*"; }
fi
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

[ -f pyproject.toml ] && [ -f testbed/rig.py ] || die "run me from an edgeprint checkout"

# --- 1. Debian packages ---------------------------------------------------------------
packages=(python3 python3-venv cups-ipp-utils dbus-daemon curl make)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if ((${#missing[@]})); then
    ((EUID == 0)) || die "missing Debian packages: ${missing[*]} (run me as root, or: sudo apt-get install ${missing[*]})"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. virtual environment -------------------------------------------------------------
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "$PYTHON is older than 3.11 (Debian 12's python3 is 3.11)"
if [ -x "$VENV_PY" ] && ! "$VENV_PY" -m pip --version >/dev/null 2>&1; then
    say ".venv has no working pip (made before python3-venv was there?): recreating it"
    "$PYTHON" -m venv --clear .venv
elif [ ! -x "$VENV_PY" ]; then
    say "creating .venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.quickstart-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/edgeprint ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing edgeprint into .venv (pip install -e '.[test]'; the first time takes a minute)"
    "$VENV_PY" -m pip install --quiet -e '.[test]'
    echo "$want" >"$stamp"
fi

# --- 3. printers ---------------------------------------------------------------------------
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    die "port $PORT is already in use (an earlier quickstart still running?); stop it or set QUICKSTART_PORT"
fi
mkdir -p "$QS"
# Another quickstart from this folder still running (on another port)? Its printers and
# config must not be pulled from under it: the appliance holds an flock on its data dir.
LOCK=$QS/data/edgeprint.lock
if [ -f "$LOCK" ] && ! flock -n "$LOCK" true 2>/dev/null; then
    die "an appliance from an earlier quickstart in this folder is still running (pid $(head -n1 "$LOCK" 2>/dev/null || echo '?')); stop it first (Ctrl-C in its terminal, or kill -TERM that pid), or run the second one from another clone"
fi
"$VENV_PY" -m testbed.rig stop "$RIG_DIR" >/dev/null # leftovers of an earlier run, by recorded pid

SERVE_PID=
cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM HUP
    trap '' PIPE # the terminal (or a pipe) may be gone: stopping must still finish
    if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
        kill -TERM "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    "$VENV_PY" -m testbed.rig stop "$RIG_DIR" >/dev/null 2>&1
    say "printers stopped" 2>/dev/null
    exit "$rc"
}
# Ctrl-C / SIGTERM / SIGHUP: ask the appliance to stop (gracefully); the wait
# below returns, and cleanup runs on EXIT.
on_signal() {
    trap '' PIPE
    if [ -n "$SERVE_PID" ]; then
        kill -TERM "$SERVE_PID" 2>/dev/null || true
    else
        exit 130
    fi
}
trap cleanup EXIT
trap on_signal INT TERM HUP

say "starting 2 IPP printers (ippeveprinter) in $RIG_DIR"
"$VENV_PY" -m testbed.rig start "$RIG_DIR" -n 2 >/dev/null
uri() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$RIG_DIR/printers.tsv"; }
URI1=$(uri printer-01)
URI2=$(uri printer-02)
[ -n "$URI1" ] && [ -n "$URI2" ] || die "the rig did not record its printers ($RIG_DIR/printers.tsv)"

# --- 4. tokens and config ----------------------------------------------------------------
# Tokens are kept across runs so the curl lines keep working: tokens.env holds the
# plain tokens, tokens.toml the matching [[tokens]] entries (SHA-256 only).
# shellcheck disable=SC1091
if [ -s "$QS/tokens.env" ] && [ -s "$QS/tokens.toml" ] &&
    (source "$QS/tokens.env" && [ -n "${KIOSK_TOKEN:-}" ] && [ -n "${TECH_TOKEN:-}" ]); then
    say "reusing the tokens in $QS/tokens.env"
else
    say "making a kiosk and a tech token (edgeprint token new)"
    new_token() { # ROLE NAME -> sets TOKEN and appends the [[tokens]] entry to tokens.toml.new
        local out
        out=$(.venv/bin/edgeprint token new --role "$1" --name "$2")
        TOKEN=$(printf '%s\n' "$out" | sed -n '2s/^# //p')
        [ -n "$TOKEN" ] || die "could not read the token from 'edgeprint token new'"
        printf '\n%s\n' "$(printf '%s\n' "$out" | grep -v '^#')" >>"$QS/tokens.toml.new"
    }
    : >"$QS/tokens.toml.new"
    new_token kiosk kiosk-quickstart
    kiosk=$TOKEN
    new_token tech tech-quickstart
    tech=$TOKEN
    (
        umask 077
        printf 'KIOSK_TOKEN=%s\nTECH_TOKEN=%s\n' "$kiosk" "$tech" >"$QS/tokens.env.new"
    )
    mv "$QS/tokens.toml.new" "$QS/tokens.toml"
    mv "$QS/tokens.env.new" "$QS/tokens.env"
fi
# shellcheck disable=SC1091
source "$QS/tokens.env"
(umask 077 && rm -f "$QS/tech.token" && printf '%s\n' "$TECH_TOKEN" >"$QS/tech.token") # the CLI reads it: edgeprint status

mkdir -p "$QS/data"
cat >"$CONFIG.new" <<EOF
# Written by scripts/quickstart.sh on every run; edit a copy, not this file.
[server]
host = "127.0.0.1"
port = $PORT
data_dir = '$ROOT/$QS/data'
tls = "self-signed"   # https:// and ipps:// with $QS/tls.crt and tls.key

[[printers]]
name = "printer-01"
uri = "$URI1"
pool = "lobby"

[[printers]]
name = "printer-02"
uri = "$URI2"
pool = "lobby"
EOF
cat "$QS/tokens.toml" >>"$CONFIG.new"
mv "$CONFIG.new" "$CONFIG"
# The appliance's certificate, kept across runs so pins hold; made now (not at the first
# start) so its pin can be shown below. One that no longer loads (expired) is made anew.
"$VENV_PY" - "$QS" <<'PY'
import sys
from pathlib import Path

from edgeprint import certificates, tls_runtime

qs = Path(sys.argv[1])
try:
    certificates.load(qs / "tls.crt", qs / "tls.key")
except certificates.CertificateError:
    certificates.make_self_signed(qs / "tls.crt", qs / "tls.key", tls_runtime.default_names("127.0.0.1"))
PY
.venv/bin/edgeprint check-config "$CONFIG" >/dev/null

"$VENV_PY" -c 'from testbed.pdfs import make_pdf; open(".quickstart/badge.pdf", "wb").write(make_pdf("Ada Lovelace"))'

TLS_SHOWN=$(.venv/bin/edgeprint tls fingerprint --config "$CONFIG")
PIN=$(printf '%s\n' "$TLS_SHOWN" | sed -n 's/^  public key pin: *//p')
FINGERPRINT=$(printf '%s\n' "$TLS_SHOWN" | sed -n 's/^  SHA-256 fingerprint: *//p')
[ -n "$PIN" ] && [ -n "$FINGERPRINT" ] || die "could not read the certificate's pin ($QS/tls.crt)"

# --- 5. run -----------------------------------------------------------------------------------
API=https://127.0.0.1:$PORT
cat <<EOF

  printers   printer-01  $URI1
             printer-02  $URI2   (pool "lobby"; ground truth: $RIG_DIR/printer-NN/prints.log)
  config     $CONFIG
  tokens     $QS/tokens.env
  TLS        $QS/tls.crt: clients trust it (curl --cacert $QS/tls.crt) or pin it:
             SHA-256 fingerprint  $FINGERPRINT
             public key pin       $PIN
             curl --insecure --pinnedpubkey '$PIN' $API/healthz
             the README's pinning examples read these:
               export EDGEPRINT_URL=$API EDGEPRINT_HOST=127.0.0.1:$PORT
               export EDGEPRINT_PIN='$PIN'
               export EDGEPRINT_FINGERPRINT='$FINGERPRINT'
  a token    while it runs (the token is shown, its [[tokens]] entry goes to tokens.toml, kept
             across runs, and to config.toml, which a reload reads):
               .venv/bin/edgeprint token new --role viewer --name dash-1 | tee /dev/stderr | grep -v '^#' | tee -a $QS/tokens.toml >>$CONFIG
               kill -HUP "\$(head -n1 $QS/data/edgeprint.lock)"   # the appliance's pid, not this script's

  In another terminal, from $ROOT:

    source $QS/tokens.env
    API=$API   # TLS: every curl trusts only $QS/tls.crt (--cacert)
    id_of() { python3 -c 'import json, sys; a = json.load(sys.stdin); print(a["id"]) if "id" in a else sys.exit(a)'; }

    # submit a held badge to pool "lobby" (same Idempotency-Key = same job, never a second one)
    ID=\$(curl -s --cacert $QS/tls.crt -H "Authorization: Bearer \$KIOSK_TOKEN" -H "Idempotency-Key: checkin-\$(date +%s)" \\
         -F 'metadata={"owner":"ada","pool":"lobby"};type=application/json' \\
         -F 'document=@$QS/badge.pdf;type=application/pdf' \$API/v1/jobs | id_of)

    # release it (optional body -d '{"printer":"printer-02"}' with -H "Content-Type: application/json")
    curl -s --cacert $QS/tls.crt -X POST -H "Authorization: Bearer \$KIOSK_TOKEN" \$API/v1/jobs/\$ID/release; echo

    # look at it, and at the list
    curl -s --cacert $QS/tls.crt -H "Authorization: Bearer \$KIOSK_TOKEN" \$API/v1/jobs/\$ID; echo
    curl -s --cacert $QS/tls.crt -H "Authorization: Bearer \$KIOSK_TOKEN" "\$API/v1/jobs?limit=20"; echo

    # what the printers printed: .venv/bin/python -m testbed.rig status $RIG_DIR
    # switch one off / on again (its record of prints is kept; a new quickstart run starts
    # both printers afresh, with an empty record):
    #   .venv/bin/python -m testbed.rig kill $RIG_DIR printer-01
    #   .venv/bin/python -m testbed.rig restart $RIG_DIR printer-01

  Ctrl-C stops the appliance and the printers.

EOF
say "edgeprint serve --config $CONFIG (on $API)"
.venv/bin/edgeprint serve --config "$CONFIG" &
SERVE_PID=$!
# `wait` returns early when a trapped signal arrives; wait again until serve is gone.
set +e
wait "$SERVE_PID"
rc=$?
while kill -0 "$SERVE_PID" 2>/dev/null; do
    wait "$SERVE_PID"
    rc=$?
done
set -e
SERVE_PID=
say "edgeprint stopped (exit status $rc)" || true
exit "$rc"
