#!/usr/bin/env bash
# Fan-out benchmark for Server-Sent Events: one session, N watchers, one
# change; how long until every watcher has the event (p50/p99/max over the
# watchers, median over ROUNDS changes), and the server's memory per watcher.
# The client is Benchmarks/fanout/fanout.c (see its header for the method).
#
# Each N gets a fresh server, so its memory baseline is not skewed by heap a
# previous run has freed but kept. Heartbeats are pushed out of the way
# (--heartbeat 3600) so none lands inside a measured round.
#
# Environment:
#   FANOUT_N     watcher counts to run, in order        (default "1000 5000")
#   ROUNDS       changes measured per N                  (default 20)
#   THREADS      server --threads; empty = its default (one per core)
#   GAP_MS       quiet time before each change, ms       (default 100)
#   TIMEOUT_MS   a round fails if an event is this late  (default 10000)
#   SERVER_ARGS  extra server flags
#   VERBOSE=1    print every round
#
# Exits non-zero if anything fails: a watcher refused or closed, an event
# missing, skipped or late past TIMEOUT_MS, the server dying. Missing the
# p99 target is reported, not a failure.
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."

FANOUT_N=${FANOUT_N:-"1000 5000"}
ROUNDS=${ROUNDS:-20}
THREADS=${THREADS:-}
GAP_MS=${GAP_MS:-100}
TIMEOUT_MS=${TIMEOUT_MS:-10000}
SERVER_ARGS=${SERVER_ARGS:-}
VERBOSE=${VERBOSE:-0}
TARGET_N=5000
TARGET_P99_MS=10

out=.build/bench
mkdir -p "$out"

# Client and server each hold N sockets plus a few.
largest=0
for n in $FANOUT_N; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench-fanout: FANOUT_N must list positive integers, not '$n'" >&2; exit 2; }
  (( n > largest )) && largest=$n
done
need=$((largest + 256))
if (( $(ulimit -n) < need )); then
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && (( hard < need )); then
    echo "bench-fanout: N=$largest needs $need open files, the hard limit is $hard" >&2
    exit 2
  fi
  ulimit -n "$need"
fi

echo "building the client (gcc) and the release server"
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$out/fanout" Benchmarks/fanout/fanout.c Benchmarks/fanout/measure.c Benchmarks/fanout/control.c Benchmarks/fanout/figures.c
swift build -c release --product topchrome >"$out/swift-build.log" 2>&1 \
  || { cat "$out/swift-build.log" >&2; exit 1; }

server_flags=(--max-watchers-per-session 10000 --max-watchers 20000 --heartbeat 3600)
[ -n "$THREADS" ] && server_flags+=(--threads "$THREADS")
# shellcheck disable=SC2206  # word splitting of extra flags is intended
[ -n "$SERVER_ARGS" ] && server_flags+=($SERVER_ARGS)

server_pid=""
stop_server() {
  [ -n "$server_pid" ] || return 0
  local pid=$server_pid
  server_pid=""
  kill -TERM "$pid" 2>/dev/null || return 0
  wait "$pid" 2>/dev/null || true
}
trap stop_server EXIT

source scripts/server.sh
start_server() {  # $1: log file; sets server_pid and port
  start_topchrome .build/release/topchrome "$1" "${server_flags[@]}" || return 1
  port=${base_url##*:}
}

results=()
for n in $FANOUT_N; do
  log="$out/server-$n.log"
  start_server "$log"
  echo "N=$n: server pid $server_pid on 127.0.0.1:$port, flags: ${server_flags[*]}"
  client_args=(-p "$port" -n "$n" -r "$ROUNDS" -P "$server_pid" -g "$GAP_MS" -t "$TIMEOUT_MS")
  [ "$VERBOSE" = 1 ] && client_args+=(-v)
  if ! "$out/fanout" "${client_args[@]}" | tee "$out/fanout-$n.txt"; then
    echo "bench-fanout: N=$n failed; server log ($log):" >&2
    cat "$log" >&2
    kill -0 "$server_pid" 2>/dev/null || echo "bench-fanout: the server is gone (crashed?)" >&2
    exit 1
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "bench-fanout: the server died during N=$n; log:" >&2
    cat "$log" >&2
    exit 1
  fi
  results+=("$(grep '^RESULT ' "$out/fanout-$n.txt")")
  stop_server
done

field() {  # field NAME "RESULT a=1 b=2 ..."
  local name=$1 line=$2
  sed -nE "s/.* $name=([^ ]+).*/\1/p" <<<"$line"
}

threads_shown=${THREADS:-"default ($(nproc) = cores)"}
echo
echo "Fan-out (Server-Sent Events): $ROUNDS rounds per N, server --threads $threads_shown"
echo "latency = PUT written -> watcher has the event; p50/p99 = median over rounds of the per-round value;"
echo "PUT ms = median PUT round trip; CPU ms/chg = server + client CPU per change (server at 10 ms tick resolution / rounds)"
printf '%6s | %7s | %7s | %9s | %9s | %7s | %10s | %10s | %11s | %11s\n' \
  N "p50 ms" "p99 ms" "p99 worst" "max worst" "PUT ms" "RSS before" "RSS with N" "per watcher" "CPU ms/chg"
printf '%s\n' "-------+---------+---------+-----------+-----------+---------+------------+------------+-------------+------------"
target_line="p99 target (N=$TARGET_N, p99 <= $TARGET_P99_MS ms): not run"
for line in "${results[@]}"; do
  n=$(field n "$line")
  printf '%6s | %7s | %7s | %9s | %9s | %7s | %6s MiB | %6s MiB | %7s KiB | %4s + %4s\n' \
    "$n" "$(field p50_ms "$line")" "$(field p99_ms "$line")" "$(field p99_worst_ms "$line")" \
    "$(field max_ms "$line")" "$(field put_ms "$line")" \
    "$(awk -v k="$(field rss_before_kib "$line")" 'BEGIN { printf "%.1f", k / 1024 }')" \
    "$(awk -v k="$(field rss_with_kib "$line")" 'BEGIN { printf "%.1f", k / 1024 }')" \
    "$(field kib_per_watcher "$line")" \
    "$(field server_cpu_ms_per_round "$line")" "$(field client_cpu_ms_per_round "$line")"
  if [ "$n" = "$TARGET_N" ]; then
    p99=$(field p99_ms "$line")
    verdict=$(awk -v p="$p99" -v t="$TARGET_P99_MS" 'BEGIN { print (p <= t) ? "met" : "MISSED" }')
    target_line="p99 target (N=$TARGET_N, p99 <= $TARGET_P99_MS ms): $verdict (median p99 $p99 ms)"
  fi
done
echo "$target_line"
