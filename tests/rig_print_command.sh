#!/bin/sh
# rig_print_command.sh - the "print engine" of each test printer (ippeveprinter -c).
#
# tests/rig.py starts ippeveprinter with "-c <this script>"; ippeveprinter runs
# it once per document with the spool file as $1. While it runs the IPP job is
# "processing"; exit 0 makes the job "completed", any other status "aborted".
# stderr lines starting with ATTR:, INFO:, ERROR:, STATE: are read by
# ippeveprinter (see ippeveprinter(1), "COMMAND OUTPUT"); stdout goes to a
# .prn file in the spool folder.
#
# "Printing" here means: wait SECONDS_PER_PAGE x pages x copies, then, unless a
# client canceled the job meanwhile, append ONE tab-separated line to
# $RIG_PRINTER_DIR/prints.log:
#
#   <UTC timestamp>  <job-id>  <job-name>  <user>  <pages>  <copies>  <bytes>
#
# That log is the ground truth of what came out of the printer; tests read it
# with Rig.printed(name).
#
# Environment:
#   from ippeveprinter: IPP_JOB_ID, IPP_JOB_NAME, IPP_JOB_URI, IPP_COPIES,
#                       IPP_JOB_ORIGINATING_USER_NAME
#   from tests/rig.py:  RIG_PRINTER_DIR       this printer's folder (required)
#                       RIG_SECONDS_PER_PAGE  simulated speed (default 0); the
#                                             file $RIG_PRINTER_DIR/seconds-per-page
#                                             wins, so it can change while running
#                       RIG_IPPTOOL           path of ipptool (default: ipptool)
#                       RIG_CANCEL_TEST       the ipptool test that tells whether
#                                             the job was canceled (default: the
#                                             rig_job_canceled.test next to this file)

set -u

spool_file=${1:?usage: rig_print_command.sh SPOOL-FILE}
dir=${RIG_PRINTER_DIR:?RIG_PRINTER_DIR is not set}

spp=${RIG_SECONDS_PER_PAGE:-0}
if [ -s "$dir/seconds-per-page" ]; then
    spp=$(cat "$dir/seconds-per-page")
fi
cancel_test=${RIG_CANCEL_TEST:-$(dirname "$0")/rig_job_canceled.test}
printer_pid=$PPID # ippeveprinter runs this file directly

# True while the ippeveprinter that started us lives. A zombie counts as dead
# (in containers whose PID 1 does not reap, a killed printer stays one).
printer_alive() {
    state=$(awk '{ print $3 }' "/proc/$printer_pid/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# One record per line: no tabs or line breaks inside a field.
clean() { printf '%s' "$1" | tr '\t\r\n' '   '; }

job_id=${IPP_JOB_ID:-0}
job_name=$(clean "${IPP_JOB_NAME:-}")
user=$(clean "${IPP_JOB_ORIGINATING_USER_NAME:-}")
copies=${IPP_COPIES:-1}
case $copies in '' | *[!0-9]*) copies=1 ;; esac

# Pages: count "/Type /Page" objects (not "/Type /Pages"). Good enough for the
# small uncompressed PDFs the tests send; anything else counts as one page.
pages=$(grep -a -o -E '/Type[[:space:]]*/Page([^s]|$)' "$spool_file" 2>/dev/null | wc -l)
[ "$pages" -ge 1 ] 2>/dev/null || pages=1
bytes=$(wc -c <"$spool_file" | tr -d ' ')

echo "ATTR: job-impressions=$((pages * copies))" >&2
echo "INFO: printing job $job_id: $pages page(s) x $copies" >&2

seconds=$(awk -v s="$spp" -v p="$pages" -v c="$copies" 'BEGIN { printf "%.3f", s * p * c }')
case $seconds in 0 | 0.000) ;; *) sleep "$seconds" ;; esac

# A printer that lost power (was killed) mid-job puts nothing out.
printer_alive || exit 1

# ippeveprinter does not stop this command on Cancel-Job: it answers "ok" and
# keeps the job processing with reason processing-to-stop-point until we exit.
# So ask it, right before the document would come out. The test passes only
# when a cancel is pending.
if [ -n "${IPP_JOB_URI:-}" ] &&
    "${RIG_IPPTOOL:-ipptool}" -q -T 2 "$IPP_JOB_URI" "$cancel_test" >/dev/null 2>&1; then
    echo "INFO: job $job_id canceled before output; nothing printed" >&2
    exit 0
fi

printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$job_id" "$job_name" "$user" \
    "$pages" "$copies" "$bytes" >>"$dir/prints.log"
echo "ATTR: job-impressions-completed=$((pages * copies))" >&2
exit 0
