#!/bin/bash
# fetchsizes.sh: how much work boincd and the C++ BOINC client ask a stock BOINC server for.
#
# Checks boincd's request-size deadline guard (workfetch/choose.go: a request never exceeds what
# can finish by deadlines; from a project with nothing queued it asks for one job per idle
# instance) against the real BOINC server 1.6.2 with the C++ client 7.20 beside it. For each
# scenario and each client, a fresh copy of the project (../shared/realserver/setup.sh, which
# recreates it), a fresh account and data dir, the same prefs (global_prefs_override.xml,
# read by both), jobs made by make_work.sh with the scenario's delay_bound; the client runs
# RUN_SECS and is stopped. Every scheduler request is read back from the server's scheduler log
# (debug_send lines): CPU req_secs / req_instances / est delay, work_req_seconds, work_buf_min,
# results reported, jobs sent; the account's results from the DB give the deadline misses.
#
# Scenarios (SCENARIOS="a b c"):
#   a  delay_bound 1 day (generous),                   default buffer (no buffer prefs)
#   b  delay_bound = SLACK x job run time (tight),      default buffer
#   c  tight as b,                                       work_buf_min_days 0.5, additional 0
# Jobs sleep JOB_SECS (default 40) and have rsc_fpops_est = JOB_SECS x 1e9; both clients run with
# --skip_cpu_benchmarks (1 GFLOPS), so the estimated run time is the real one.
#
# Usage (root; the clients run as user boinc, the server as boincsrv; 127.0.0.1 only):
#   bench/fetchsizes/fetchsizes.sh                 # builds boincd from this tree
#   BOINCD_BIN=/path/boincd SCENARIOS="b" RUN_SECS=120 bench/fetchsizes/fetchsizes.sh
# Env: JOB_SECS (40), SLACK (2), RUN_SECS (130), NJOBS_A (60), NJOBS_TIGHT (20),
#      BOINCD_SHARED (the realserver scripts; default ../shared/realserver beside the module),
#      OUT=DIR (keep the evidence: per-run scheduler log excerpts, client logs, DB rows).
# It starts MariaDB, Apache, the project daemons and the clients under its own RS_ROOT
# (mktemp -d /tmp/fetchsizes.XXXXXX, free ports in 33100-33899 / 33000-33999) and stops exactly
# those on exit (teardown.sh --purge, by pid files), then removes RS_ROOT.
# Not a Go package: `go test ./...` never runs it.
set -uo pipefail

HERE_FS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODROOT=$(cd "$HERE_FS/../.." && pwd)
SHARED=${BOINCD_SHARED:-$MODROOT/../shared/realserver}
[ -f "$SHARED/setup.sh" ] || SHARED=$SHARED/realserver
[ -f "$SHARED/setup.sh" ] || { echo "no realserver scripts (set BOINCD_SHARED)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }

JOB_SECS=${JOB_SECS:-40}
SLACK=${SLACK:-2}
RUN_SECS=${RUN_SECS:-130}
NJOBS_A=${NJOBS_A:-60}
NJOBS_TIGHT=${NJOBS_TIGHT:-20}
SCENARIOS=${SCENARIOS:-a b c}
OUT=${OUT:-}
TIGHT_BOUND=$(awk -v s="$SLACK" -v j="$JOB_SECS" 'BEGIN{printf "%d", s*j}')

# the harness knobs a caller may have exported must not leak into this instance
for k in RS_ROOT BOINC_SRC PROJECT HTTP_PORT DB_PORT NWU WU_SECONDS KEEP_PROJECT ESCAPE_GUI_URLS \
         MAKE_WORK CLIENT_ARGS KEEP_CLIENT NUDGE NO_CPU_PREFS; do unset "$k"; done

GO=$(command -v go || true)   # lib.sh resets PATH to the system dirs
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { # pick_port LO HI [AVOID...]
  local lo=$1 hi=$2 p i; shift 2
  for i in $(seq 200); do
    p=$(( lo + RANDOM % (hi - lo + 1) ))
    case " $* " in *" $p "*) continue;; esac
    port_free "$p" && { echo "$p"; return 0; }
  done
  return 1
}

export RS_ROOT; RS_ROOT=$(mktemp -d /tmp/fetchsizes.XXXXXX); chmod 755 "$RS_ROOT"
export HTTP_PORT DB_PORT; HTTP_PORT=$(pick_port 33100 33899); DB_PORT=$(pick_port 33100 33899 "$HTTP_PORT")
GP_CPP=$(pick_port 33000 33999 "$HTTP_PORT" "$DB_PORT"); GP_BD=$(pick_port 33000 33999 "$HTTP_PORT" "$DB_PORT" "$GP_CPP")
export NWU=0 WU_SECONDS=$JOB_SECS ESCAPE_GUI_URLS=0 GUI_PW=pw BOINCD_DONT_USE_DOCKER=true
source "$SHARED/lib.sh"

CUR_PORT=; CUR_PID=; SLEEP_PID=
cleanup() {
  trap - EXIT INT TERM
  [ -n "$SLEEP_PID" ] && kill "$SLEEP_PID" 2>/dev/null
  [ -n "$CUR_PID" ] && quit_client "$CUR_PORT" "$CUR_PID" client
  "$SHARED/teardown.sh" --purge >>"$RS_ROOT/teardown.log" 2>&1 || cat "$RS_ROOT/teardown.log" >&2
  if [ -n "$OUT" ]; then mkdir -p "$OUT"; cp -r "$RS_ROOT/evidence/." "$OUT/" 2>/dev/null; fi
  rm -rf "$RS_ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$RS_ROOT/evidence" "$CLIENTS"

if [ -n "${BOINCD_BIN:-}" ]; then
  install -m 755 "$BOINCD_BIN" "$RS_ROOT/boincd"
else
  log "building boincd"
  (cd "$MODROOT" && CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}" "${GO:?no go command}" build -o "$RS_ROOT/boincd" ./cmd/boincd) \
    || exit 1
fi
chmod 755 "$RS_ROOT/boincd"

# prefs SCENARIO: the global_prefs_override.xml body for the scenario
prefs() {
  echo "<global_preferences>"
  echo "  <suspend_cpu_usage>0</suspend_cpu_usage>"
  echo "  <niu_suspend_cpu_usage>0</niu_suspend_cpu_usage>"
  [ "$1" = c ] && printf '  <work_buf_min_days>0.5</work_buf_min_days>\n  <work_buf_additional_days>0</work_buf_additional_days>\n'
  echo "</global_preferences>"
}

# wait_feeder N: until N unsent results are in the feeder's cache (or 90 s)
wait_feeder() {
  local n=$1 i fl have
  for i in $(seq 90); do
    fl=$(ls "$PROJ_DIR"/log_*/feeder.log 2>/dev/null | head -n 1)
    have=0; [ -n "$fl" ] && have=$(grep -c "adding result" "$fl")
    [ "${have:-0}" -ge "$n" ] && return 0
    sleep 1
  done
  log "warning: only $have of $n results in the feeder's cache after 90 s"
}

# run_one SCENARIO LABEL BIN PORT BOUND NJOBS ARGS: one client on a fresh project
run_one() {
  local sc=$1 label=$2 bin=$3 port=$4 bound=$5 njobs=$6 args=$7
  local ev="$RS_ROOT/evidence/$sc-$label" dir="$RS_ROOT/c_${sc}_$label"
  mkdir -p "$ev"
  log "== scenario $sc, $label: delay_bound $bound s, $njobs jobs of $JOB_SECS s, $RUN_SECS s"
  # setup.sh's smoke check (curl | grep -q under pipefail) fails now and then: retry
  local try ok=; for try in 1 2 3; do "$SHARED/setup.sh" >>"$ev/setup.log" 2>&1 && { ok=1; break; }; sleep 2; done
  [ -n "$ok" ] || { tail -20 "$ev/setup.log" >&2; return 1; }
  sed -i -e "s:<delay_bound>[0-9]*</delay_bound>:<delay_bound>$bound</delay_bound>:" \
         -e "s:<rsc_fpops_est>[^<]*</rsc_fpops_est>:<rsc_fpops_est>${JOB_SECS}e9</rsc_fpops_est>:" \
    "$PROJ_DIR/templates/${APP}_in"
  "$SHARED/make_work.sh" "$njobs" "$JOB_SECS" >"$ev/make_work.log" 2>&1 || { cat "$ev/make_work.log" >&2; return 1; }
  wait_feeder "$njobs"
  new_account "fs-$sc-$label" 2>>"$ev/setup.log"
  fresh_dir "$dir"; prefs "$sc" >"$dir/global_prefs_override.xml"; chown "$CLIENT_USER:" "$dir/global_prefs_override.xml"
  local slog; slog=$(ls "$PROJ_DIR"/log_*/scheduler.log 2>/dev/null | head -n 1)
  local off=0; [ -n "$slog" ] && off=$(wc -l <"$slog")
  CLIENT_ARGS=$args start_client "$bin" "$dir" "$port" 2>>"$ev/setup.log"
  CUR_PORT=$port; CUR_PID=$CPID
  wait_gui_rpc "$port" "$CPID" || { log "$label: no GUI RPC"; }
  local t0; t0=$(date +%s)
  boinccmd --host "127.0.0.1:$port" --passwd "$GUI_PW" --project_attach "$MASTER_URL" "$AUTH" >/dev/null 2>&1 \
    || log "$label: attach failed"
  sleep "$RUN_SECS" & SLEEP_PID=$!; wait "$SLEEP_PID"; SLEEP_PID=   # wait: a signal ends it at once
  boinccmd --host "127.0.0.1:$port" --passwd "$GUI_PW" --get_tasks >"$ev/tasks.txt" 2>&1
  boinccmd --host "127.0.0.1:$port" --passwd "$GUI_PW" --get_messages 0 >"$ev/messages.txt" 2>&1
  quit_client "$port" "$CPID" "$label" 2>/dev/null; CUR_PID=
  cp "$dir"/rs_client.out "$dir"/sched_request_*.xml "$dir"/sched_reply_*.xml "$dir"/global_prefs_override.xml "$ev/" 2>/dev/null
  [ -n "$slog" ] || slog=$(ls "$PROJ_DIR"/log_*/scheduler.log | head -n 1)
  tail -n +"$((off + 1))" "$slog" >"$ev/scheduler.log"
  # results: sent, reported, reported after the deadline, past the deadline unreported, client errors
  sql "select count(*), ifnull(sum(server_state=5 and outcome<>4),0),
         ifnull(sum(received_time>report_deadline),0),
         ifnull(sum(received_time=0 and report_deadline<unix_timestamp()),0),
         ifnull(sum(outcome=3),0)
       from result where userid=$UID_ and sent_time>0" >"$ev/results_summary.tsv"
  sql "select id, name, server_state, outcome, client_state, from_unixtime(sent_time), from_unixtime(report_deadline),
         from_unixtime(received_time), round(elapsed_time) from result where userid=$UID_ order by id" >"$ev/results.tsv"
  # one row per scheduler request of this account's host: the CGI's [PID=n] tags its lines
  local hosts; hosts=$(sql "select id from host where userid=$UID_" | tr '\n' ' ')
  awk -v t0="$(date -d @"$t0" +%H:%M:%S)" -v hosts=" $hosts " -v sc="$sc" -v label="$label" '
    function tag(l) { if (match(l, /\[PID=[0-9]+ *\]/)) return substr(l, RSTART, RLENGTH); return "" }
    function sod(s,  t) { split(s, t, ":"); return t[1]*3600 + t[2]*60 + int(t[3]) }
    function after(w,  i) { for (i = 1; i < NF; i++) if ($i == w) return $(i+1); return "-" }
    { p = tag($0) }
    /Request: \[USER#/ { st[p] = sod($2) - sod(t0); if (st[p] < 0) st[p] += 86400
                        rs[p] = ri[p] = ed[p] = wr[p] = wb[p] = "-"; nrep[p] = 0 }
    /\[send\] CPU: req/ { rs[p] = after("req"); ri[p] = after("sec,"); ed[p] = $NF }
    /\[send\] work_req_seconds:/ { wr[p] = $(NF-1) }
    /work_buf_min/ { wb[p] = $NF }
    /\[handle\]/ && /RESULT#/ { match($0, /\[RESULT#[0-9]+\]/); k = p SUBSEP substr($0, RSTART, RLENGTH)
                               if (!(k in seen)) { seen[k]; nrep[p]++ } }
    /Sending reply to \[HOST#/ {
      match($0, /\[HOST#[0-9]+\]/); hh = substr($0, RSTART+6, RLENGTH-7)
      if (index(hosts, " " hh " ") == 0) next
      n = $0; sub(/.*\]: /, "", n); split(n, a, " ")
      printf "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sc, label, ++nr, st[p], rs[p], ri[p], ed[p], wr[p], wb[p], nrep[p], a[1]
    }
' "$ev/scheduler.log" >"$ev/requests.tsv"
  read -r sent reported late pastdue errs <"$ev/results_summary.tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$label" "$bound" "$sent" "$reported" "$late" "$pastdue" "$errs" >>"$RS_ROOT/evidence/summary.tsv"
  cat "$ev/requests.tsv" >>"$RS_ROOT/evidence/requests.tsv"
}

: >"$RS_ROOT/evidence/requests.tsv"; : >"$RS_ROOT/evidence/summary.tsv"
for sc in $SCENARIOS; do
  case $sc in
    a) bound=86400; nj=$NJOBS_A ;;
    b|c) bound=$TIGHT_BOUND; nj=$NJOBS_TIGHT ;;
    *) log "unknown scenario $sc"; continue ;;
  esac
  run_one "$sc" cpp /usr/bin/boinc "$GP_CPP" "$bound" "$nj" "--skip_cpu_benchmarks --no_gpus --allow_multiple_clients" || exit 1
  run_one "$sc" boincd "$RS_ROOT/boincd" "$GP_BD" "$bound" "$nj" "--skip_cpu_benchmarks --no_gpus" || exit 1
done

echo
echo "Scheduler requests to a stock BOINC server 1.6.2 (2 CPUs here: $(nproc)); jobs of $JOB_SECS s (est = real),"
echo "tight delay_bound $TIGHT_BOUND s; each client $RUN_SECS s on a fresh project; values as the server logged them."
echo "a: bound 1 day, default buffer; b: tight bound, default buffer; c: tight bound, work_buf_min 0.5 d + 0"
printf '%-3s %-7s %3s %5s %12s %8s %10s %12s %8s %4s %5s\n' sc client rpc t_s req_secs req_inst est_delay work_req_s buf_min rep sent
awk -F'\t' '{ printf "%-3s %-7s %3s %5s %12s %8s %10s %12s %8s %4s %5s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$RS_ROOT/evidence/requests.tsv"
echo
printf '%-3s %-7s %6s %5s %9s %14s %15s %7s\n' sc client bound sent reported late_reports past_due_unrep errors
awk -F'\t' '{ printf "%-3s %-7s %6s %5s %9s %14s %15s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$RS_ROOT/evidence/summary.tsv"
