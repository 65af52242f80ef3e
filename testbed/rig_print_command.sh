#!/bin/sh
# rig_print_command.sh - the "print engine" of each test printer (ippeveprinter -c).
#
# testbed/rig.py starts ippeveprinter with "-c <this script>"; ippeveprinter runs
# it once per document with the spool file as $1. While it runs the IPP job is
# "processing"; exit 0 makes the job "completed", any other status "aborted".
# stderr lines starting with ATTR:, INFO:, ERROR:, STATE: are read by
# ippeveprinter (see ippeveprinter(1), "COMMAND OUTPUT"); stdout goes to a
# .prn file in the spool folder:
#   STATE: +media-jam   add a printer-state-reasons keyword (shown as
#                       media-jam-warning while processing, -report when idle)
#   STATE: -media-jam   remove it
#   ERROR: text         becomes the job's job-state-message
#
# "Printing" here means: wait SECONDS_PER_PAGE x pages x copies, then, unless a
# client canceled the job meanwhile, append ONE tab-separated line to
# $RIG_PRINTER_DIR/prints.log:
#
#   <UTC timestamp>  <job-id>  <job-name>  <user>  <pages>  <copies>  <bytes>  <out>
#
# <pages> is the document's page count, <out> the impressions that came out (pages x
# copies for a whole copy; fewer for a copy cut short, a page-ranges job or one aborted
# part-way).
#
# (a document cut short still prints: what came through, with a last page that
# does not count in job-impressions-completed). That log is the ground truth of what came out of the printer; tests read it
# with Rig.printed(name).
#
# Job-level faults: when the job starts, the first line of
# $RIG_PRINTER_DIR/fault (written by Rig.fault) selects what happens to it:
#
#   [once] [match=SUBSTRING] [user=NAME] MODE [ARG...]
#
#   hold REASON[,REASON]  STATE: +REASON, keep the job processing until the
#                         fault line is removed or changed (Rig.clear_fault),
#                         then STATE: -REASON and print (unless canceled
#                         meanwhile). A Cancel-Job while held ends the job at
#                         once, nothing printed, as a device drops a jammed
#                         job it is told to cancel. Gives up (job aborted)
#                         after RIG_HOLD_MAX_SECONDS (default 600). REASON
#                         "none" holds without a reason (a job held at the
#                         printer, e.g. for a release at its panel).
#   abort-at N [REASON]   N impressions come out (logged, <out> = N), then the
#                         job is aborted (job-impressions-completed = N);
#                         REASON, if given, stays on the printer as for abort
#   docerror              nothing comes out and the job completes; the file
#                         docerror-<job-id> says the printer could not print the
#                         document (a front that reports job-state-reasons reads it)
#   abort [REASON]        ERROR: message, exit 1: the job is aborted and nothing
#                         printed. REASON, if given, is added to the printer and
#                         stays (REASON-report) until the next job that prints.
#   slow SECONDS          the job takes SECONDS longer, then prints
#   die-before [SECONDS]  SIGKILL the printer SECONDS (default 0.25) after the
#                         job started; nothing printed
#   die-after [SECONDS]   print (and log), then SIGKILL the printer SECONDS
#                         (default 0.25) later, before it can report the job
#                         completed
#                         (The pause before the kill lets the printer answer the
#                         Print-Job/Send-Document that started the job: it
#                         starts this command before it writes that answer, and
#                         a printer killed at once loses it about 1 time in 15.)
#   once                  the fault applies to one job: the file is removed
#                         when that job starts (hold ignores it: its file is
#                         what releases the job)
#   user=NAME             the fault applies only to jobs of this requesting user
#   match=SUBSTRING       the fault applies only to jobs whose job-name (as
#                         ippeveprinter passes it in IPP_JOB_NAME) contains
#                         SUBSTRING; other jobs print normally and do not
#                         use up a "once"
#
# Environment:
#   from ippeveprinter: IPP_JOB_ID, IPP_JOB_NAME, IPP_JOB_URI, IPP_COPIES,
#                       IPP_JOB_ORIGINATING_USER_NAME
#   from testbed/rig.py:  RIG_PRINTER_DIR       this printer's folder (required)
#                       RIG_SECONDS_PER_PAGE  simulated speed (default 0); the
#                                             file $RIG_PRINTER_DIR/seconds-per-page
#                                             wins, so it can change while running
#                       RIG_IPPTOOL           path of ipptool (default: ipptool)
#                       RIG_CANCEL_TEST       the ipptool test that tells whether
#                                             the job was canceled (default: the
#                                             rig_job_canceled.test next to this file)
#                       RIG_HOLD_MAX_SECONDS  longest "hold" (default 600)
#                       RIG_MEDIA_TEST        the ipptool test that reads media-ready
#                                             (when the rig folder has record-media)

set -u

spool_file=${1:?usage: rig_print_command.sh SPOOL-FILE}
dir=${RIG_PRINTER_DIR:?RIG_PRINTER_DIR is not set}

spp=${RIG_SECONDS_PER_PAGE:-0}
if [ -s "$dir/seconds-per-page" ]; then
    spp=$(cat "$dir/seconds-per-page")
fi
cancel_test=${RIG_CANCEL_TEST:-$(dirname "$0")/rig_job_canceled.test}
hold_max=${RIG_HOLD_MAX_SECONDS:-600}
case $hold_max in '' | *[!0-9]*) hold_max=600 ;; esac
printer_pid=$PPID # ippeveprinter runs this file directly

# True while the ippeveprinter that started us lives. A zombie counts as dead
# (in containers whose PID 1 does not reap, a killed printer stays one).
printer_alive() {
    state=$(awk '{ print $3 }' "/proc/$printer_pid/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# SIGKILL the printer, as a power cut would; only while that pid still is the
# ippeveprinter that started us (never a recycled pid).
kill_printer() {
    printer_alive || return 0
    grep -q ippeveprinter "/proc/$printer_pid/cmdline" 2>/dev/null || return 0
    kill -KILL "$printer_pid"
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
# PWG raster: one "PwgRaster" MediaClass per page header; Apple raster: the
# page count in the file header (bytes 8-11, big-endian).
case $(head -c 4 "$spool_file" 2>/dev/null) in
RaS2) pages=$(grep -a -o 'PwgRaster' "$spool_file" | wc -l) ;;
UNIR) pages=$(od -An -tu4 --endian=big -j8 -N4 "$spool_file" | tr -d ' ') ;;
*) pages=$(grep -a -o -E '/Type[[:space:]]*/Page([^s]|$)' "$spool_file" 2>/dev/null | wc -l) ;;
esac
[ "$pages" -ge 1 ] 2>/dev/null || pages=1
bytes=$(wc -c <"$spool_file" | tr -d ' ')
# A PDF cut short (no %%EOF in its last 64 bytes) prints what came through: its last
# page is incomplete, and the printer says so in job-impressions-completed.
done_pages=$pages
case $(head -c 4 "$spool_file" 2>/dev/null) in
RaS2 | UNIR) ;; # a raster has no %%EOF: its pages are whole by their headers
*)
    if ! tail -c 64 "$spool_file" 2>/dev/null | grep -a -q '%%EOF'; then
        done_pages=$((pages - 1))
    fi
    ;;
esac

# --- the fault for this job ----------------------------------------------------

fault_file=$dir/fault
fault_line=""
mode=""
once=no
match=""
match_user=""
if [ -s "$fault_file" ]; then
    fault_line=$(head -n 1 "$fault_file")
    set -f # split the line into words without expanding * or ?
    # shellcheck disable=SC2086
    set -- $fault_line
    set +f
    while [ $# -gt 0 ]; do
        case $1 in
            once) once=yes ;;
            match=*) match=${1#match=} ;;
            user=*) match_user=${1#user=} ;;
            *) break ;;
        esac
        shift
    done
    mode=${1:-}
    [ $# -gt 0 ] && shift
    if [ -n "$match" ]; then
        case ${IPP_JOB_NAME:-} in
            *"$match"*) ;;
            *) mode="" ;; # not this job
        esac
    fi
    if [ -n "$match_user" ] && [ "${IPP_JOB_ORIGINATING_USER_NAME:-}" != "$match_user" ]; then
        mode="" # not this user's job
    fi
    if [ -n "$mode" ] && [ "$once" = yes ] && [ "$mode" != hold ]; then
        rm -f "$fault_file"
    fi
fi

# page-ranges (IPP_PAGE_RANGES, e.g. "3-5" or "1-2,4-4"): only those pages come out.
want=$pages
if [ -n "${IPP_PAGE_RANGES:-}" ]; then
    want=$(printf '%s\n' "$IPP_PAGE_RANGES" | awk -v n="$pages" -F, '{
        t = 0
        for (i = 1; i <= NF; i++) {
            split($i, r, "-"); lo = r[1] + 0; hi = (r[2] == "" ? lo : r[2] + 0)
            if (lo < 1) lo = 1; if (hi > n) hi = n
            if (hi >= lo) t += hi - lo + 1
        }
        print t }')
    done_pages=$(( done_pages < want ? done_pages : want ))
fi

echo "ATTR: job-impressions=$((want * copies))" >&2
echo "INFO: printing job $job_id: $pages page(s) x $copies, fault ${mode:-none}" >&2

# --- printing --------------------------------------------------------------------

# A reason left on the printer by an "abort REASON" fault goes away with the
# next job that gets as far as printing, as if someone fixed the printer.
clear_left_reason() {
    if [ -s "$dir/left-reason" ]; then
        echo "STATE: -$(cat "$dir/left-reason")" >&2
        rm -f "$dir/left-reason"
    fi
}

# One ground-truth line: what came out of this job ($1: impressions out).
log_printed() {
    printed_time=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$printed_time" "$job_id" "$job_name" "$user" \
        "$pages" "$copies" "$bytes" "$1" >>"$dir/prints.log"
    log_media
}

# With the rig's record-media file (Rig(record_media=True)): what this printer had ready
# when it began printing the document (the stock it fed), asked of the printer itself,
# logged with the printed document as one line in media.log:
#   <UTC timestamp>  <job-id>  <job-name>  <media-ready, comma-separated; ? if no answer>
ready=""
read_media() {
    [ -e "$dir/../record-media" ] && [ -s "$dir/port" ] || return 0
    ready=$("${RIG_IPPTOOL:-ipptool}" -c -T 2 "ipp://127.0.0.1:$(cat "$dir/port")/ipp/print" \
        "${RIG_MEDIA_TEST:-$(dirname "$0")/rig_media_ready.test}" 2>/dev/null |
        sed -n '2{s/"//g;p;}')
    [ -n "$ready" ] || ready="?"
}
log_media() {
    [ -e "$dir/../record-media" ] || return 0
    [ -n "$ready" ] || read_media
    printf '%s\t%s\t%s\t%s\n' "$printed_time" "$job_id" "$job_name" "${ready:-?}" \
        >>"$dir/media.log"
}

# True when a client asked to cancel this job (ippeveprinter keeps it processing with
# processing-to-stop-point until this command exits). Asked of this printer itself on
# its own port: IPP_JOB_URI names the host and port the client used, which may be a
# proxy in front of the printer (tests/adversary) that answers for itself.
cancel_pending() {
    [ -n "${IPP_JOB_ID:-}" ] && [ -s "$dir/port" ] &&
        "${RIG_IPPTOOL:-ipptool}" -q -T 2 \
            "ipp://127.0.0.1:$(cat "$dir/port")/ipp/print/$IPP_JOB_ID" "$cancel_test" \
            >/dev/null 2>&1
}

print_document() {
    clear_left_reason
    read_media
    seconds=$(awk -v s="$spp" -v p="$want" -v c="$copies" 'BEGIN { printf "%.3f", s * p * c }')
    case $seconds in 0 | 0.000) ;; *) sleep "$seconds" ;; esac

    # A printer that lost power (was killed) mid-job puts nothing out.
    printer_alive || exit 1

    # ippeveprinter does not stop this command on Cancel-Job: it answers "ok" and
    # keeps the job processing with reason processing-to-stop-point until we exit.
    # So ask it, right before the document would come out. The test passes only
    # when a cancel is pending.
    if cancel_pending; then
        echo "INFO: job $job_id canceled before output; nothing printed" >&2
        return 0
    fi

    log_printed $((done_pages * copies))
    echo "ATTR: job-impressions-completed=$((done_pages * copies))" >&2
}

case $mode in
    "")
        print_document
        ;;
    hold)
        reason=${1:-media-jam}
        [ "$reason" = none ] || echo "STATE: +$reason" >&2
        echo "INFO: job $job_id held by injected fault: $reason" >&2
        deadline=$(($(date +%s) + hold_max))
        looks=0
        # Held while the fault file still says the same thing.
        while [ "$(head -n 1 "$fault_file" 2>/dev/null)" = "$fault_line" ]; do
            printer_alive || exit 1
            if [ "$(date +%s)" -ge "$deadline" ]; then
                [ "$reason" = none ] || echo "STATE: -$reason" >&2
                echo "ERROR:hold fault lasted longer than ${hold_max}s" >&2
                exit 1
            fi
            looks=$((looks + 1))
            if [ $((looks % 3)) -eq 0 ] && cancel_pending; then
                [ "$reason" = none ] || echo "STATE: -$reason" >&2
                echo "INFO: job $job_id canceled while held; nothing printed" >&2
                exit 0
            fi
            sleep 0.1
        done
        [ "$reason" = none ] || echo "STATE: -$reason" >&2
        print_document
        ;;
    abort-at)
        n=${1:-1}
        case $n in '' | *[!0-9]*) n=1 ;; esac
        [ "$n" -le $((want * copies)) ] || n=$((want * copies))
        seconds=$(awk -v s="$spp" -v p="$n" 'BEGIN { printf "%.3f", s * p }')
        case $seconds in 0 | 0.000) ;; *) sleep "$seconds" ;; esac
        printer_alive || exit 1
        log_printed "$n"
        echo "ATTR: job-impressions-completed=$n" >&2
        if [ -n "${2:-}" ]; then
            echo "STATE: +$2" >&2
            printf '%s\n' "$2" >"$dir/left-reason"
        fi
        echo "ERROR:job aborted after $n impression(s) by injected fault${2:+ ($2)}" >&2
        exit 1
        ;;
    docerror)
        : >"$dir/docerror-$job_id"
        echo "ATTR: job-impressions-completed=0" >&2
        echo "ERROR:the printer could not print the document (injected fault)" >&2
        exit 0
        ;;
    abort)
        if [ -n "${1:-}" ]; then
            echo "STATE: +$1" >&2
            printf '%s\n' "$1" >"$dir/left-reason"
        fi
        echo "ERROR:job aborted by injected fault${1:+ ($1)}" >&2
        exit 1
        ;;
    slow)
        sleep "${1:-10}"
        print_document
        ;;
    die-before)
        echo "INFO: job $job_id: injected fault kills the printer before printing" >&2
        sleep "${1:-0.25}"
        kill_printer
        exit 1
        ;;
    die-after)
        print_document
        sleep "${1:-0.25}"
        kill_printer
        exit 0
        ;;
    *)
        echo "ERROR:unknown fault '$mode' in $fault_file" >&2
        exit 1
        ;;
esac
exit 0
