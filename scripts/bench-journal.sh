#!/usr/bin/env bash
# What the state file's journal costs (BENCHMARKS.md "State file journal"):
# the server's CPU per request on the scroll workload without a state file
# and with one (--fsync everysec, or FSYNC), rounds alternating so the
# shared machine's drift falls on both alike (ABBA: each round swaps which
# goes first), over 1,000 and 100,000 sessions, with the medians; and the
# journal's bytes per second at that load, from /metrics.
#
# Settings (environment): SESSIONS_LIST="1000 100000" ROUNDS=6
#   WRK_CONNS=32 WRK_DURATION=5s FSYNC=everysec
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SESSIONS_LIST:=1000 100000}" "${ROUNDS:=6}" "${WRK_CONNS:=32}" "${WRK_DURATION:=5s}" "${FSYNC:=everysec}"
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
swift build -c release --product topchrome >/dev/null
binary=.build/release/topchrome
source scripts/server.sh
work=$(mktemp -d)
pids=()
trap stop_started EXIT
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk" IDS_FILE="$work/ids"
journal_bytes() { curl -s "$1/metrics" | awk '$1 == "topchrome_state_file_journal_bytes" { print $2 }'; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, wrk -t1 -c$WRK_CONNS -d$WRK_DURATION scroll, $ROUNDS rounds alternating"
printf '%-9s %-10s %6s %10s %11s %13s\n' sessions state round "req/s" "CPU µs/req" "journal B/s"
for sessions in $SESSIONS_LIST; do
  # One server per configuration, its sessions created once, then the rounds alternate between them.
  rm -rf "$work/state" && mkdir -p "$work/state"
  start_topchrome "$binary" "$work/none.log" --log-level warn
  none_pid=$server_pid none_url=$base_url
  pids+=("$none_pid")
  start_topchrome "$binary" "$work/journal.log" --log-level warn --state-file "$work/state/s.jsonl" --fsync "$FSYNC"
  journal_pid=$server_pid journal_url=$base_url
  pids+=("$journal_pid")
  create_sessions "$none_url" "$sessions" "$work/ids.none"
  create_sessions "$journal_url" "$sessions" "$work/ids.journal"
  for round in $(seq "$ROUNDS"); do
    order="none journal"
    (( round % 2 == 0 )) && order="journal none"
    for state in $order; do
      pid_var=${state}_pid url_var=${state}_url
      pid=${!pid_var} url=${!url_var}
      cp "$work/ids.$state" "$work/ids"
      wrk -t1 -c"$WRK_CONNS" -d1s -s "$BENCH_LUA_DIR/scroll.lua" "$url" >/dev/null  # warm-up
      bytes_before=$([ "$state" = journal ] && journal_bytes "$url" || echo 0)
      ticks_before=$(proc_ticks "$pid")
      wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" -s "$BENCH_LUA_DIR/scroll.lua" "$url" >"$work/wrk.txt"
      ticks=$(( $(proc_ticks "$pid") - ticks_before ))
      bytes_after=$([ "$state" = journal ] && journal_bytes "$url" || echo 0)
      python3 - "$sessions" "$state" "$round" "$work/wrk.txt" "$ticks" "$(getconf CLK_TCK)" "$bytes_before" "$bytes_after" <<'PY'
import re, sys
sessions, state, round_, path = sys.argv[1:5]
ticks, hz, before, after = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
text = open(path).read()
requests = int(re.search(r"(\d+) requests in ([\d.]+)(s|m)", text).group(1))
seconds = float(re.search(r"requests in ([\d.]+)s", text).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
label = "none" if state == "none" else "journal"
# A snapshot may restart the journal mid-run; then the rate is not known.
per_second = f"{(after - before) / seconds:>13.0f}" if state != "none" and after >= before else f"{'-':>13}"
print(f"{sessions:<9} {label:<10} {round_:>6} {rate:>10.0f} {ticks / hz * 1e6 / requests:>11.2f} {per_second}")
PY
    done
  done | tee "$work/rows"
  python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
cpu = {state: statistics.median(float(r[4]) for r in rows if r[1] == state) for state in ("none", "journal")}
rates = [float(r[5]) for r in rows if r[1] == "journal" and r[5] != "-"]
print(f"# {rows[0][0]} sessions: median CPU µs/req {cpu['none']:.2f} without, {cpu['journal']:.2f} with the journal "
      f"({(cpu['journal'] / cpu['none'] - 1) * 100:+.1f} %); journal {statistics.median(rates) / 1e3:.0f} kB/s" if rates else "")
PY
  kill "$none_pid" "$journal_pid"; wait "$none_pid" "$journal_pid" 2>/dev/null || true
  pids=()
done
