#!/bin/bash
# rig_print_lean.sh - the rig's lean print engine (Rig(engine="lean")), for benches
# that run many printers on one box and inject no faults.
#
# The full engine (rig_print_command.sh) costs about 30 ms of CPU per document: a
# dozen processes (head, grep, awk, date, ipptool's cancel check, ...). With 200
# printers printing at once that is the rig measuring itself. This one writes the
# same ground-truth line to $RIG_PRINTER_DIR/prints.log with bash builtins and two
# small processes (grep counts pages, wc counts bytes):
#
#   <UTC timestamp>  <job-id>  <job-name>  <user>  <pages>  <copies>  <bytes>
#
# What it leaves out: the speed setting (it prints in no time), job-level faults
# (the fault file), and the check for a pending Cancel-Job before output (a job
# canceled while it runs still prints). Benches that need any of those use the
# full engine.
set -u
export TZ=UTC0
spool_file=${1:?usage: rig_print_lean.sh SPOOL-FILE}
dir=${RIG_PRINTER_DIR:?RIG_PRINTER_DIR is not set}
copies=${IPP_COPIES:-1}
case $copies in '' | *[!0-9]*) copies=1 ;; esac
pages=$(grep -a -c -E '/Type[[:space:]]*/Page([^s]|$)' "$spool_file")
[ "$pages" -ge 1 ] 2>/dev/null || pages=1
bytes=$(wc -c <"$spool_file")
name=${IPP_JOB_NAME:-}
name=${name//[$'\t\r\n']/ }
user=${IPP_JOB_ORIGINATING_USER_NAME:-}
user=${user//[$'\t\r\n']/ }
now=$EPOCHREALTIME
printf -v stamp '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "${now%.*}" "${now#*.}"
stamp=${stamp:0:23}Z
echo "ATTR: job-impressions=$((pages * copies))" >&2
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$stamp" "${IPP_JOB_ID:-0}" "$name" "$user" \
    "$pages" "$copies" "$bytes" >>"$dir/prints.log"
echo "ATTR: job-impressions-completed=$((pages * copies))" >&2
