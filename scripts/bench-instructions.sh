#!/usr/bin/env bash
# Instructions per request, counted by callgrind in the whole server process
# while wrk drives it (BENCHMARKS.md "Instructions per request"). A count is
# the same for the same binary and inputs whatever else the machine does, so
# it shows a change of a few per cent that CPU time, spread ±15 % a round on
# these shared machines, cannot.
#
# Printed per workload: every user-space instruction per request; the part in
# libc's memset, which is nearly all libmicrohttpd clearing a connection's
# memory for each request (valgrind counts each byte of `rep stosb` as an
# instruction, where the CPU clears those 8 KiB in ~0.1 µs); and the rest,
# which is the figure to compare. The kernel's share (most of a request's
# CPU, in the loopback TCP stack) is not counted.
#
# Usage: scripts/bench-instructions.sh [COMMAND...]
#   COMMAND starts the server to count, with {port} where its port goes;
#   default: the release build at its defaults, one thread. Any server that
#   speaks the v1 API can be counted the same way, e.g. a reference build.
# Settings (environment): WORKLOADS="scroll get mixed" SESSIONS=1000
#   WRK_CONNS=8 WARMUP=2s COUNTED=6s
#   STORES="memory" (or "memory redis": the default command once on each
#   store; for redis, a redis-server of its own on a free port; Redis's own
#   work is not counted, only the server's, I/O threads included)
#   KEEP=DIR keeps each callgrind dump there (STORE-WORKLOAD.callgrind), for
#   callgrind_annotate --inclusive=yes
#   BENCH_AUTH= the global token, for a server with --auth-token-file;
#   MINT= a command run with the ids file and a tokens file to write (an
#   access token per id, for the scroll workload: scripts/bench-tokens.sh)
#   BEHAVIOR= (revealAtTop, pinned, enterAlways, exitUntilCollapsed: the
#   sessions are created with it; unset, with no body, as before behaviours)
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${WORKLOADS:=scroll get mixed}" "${SESSIONS:=1000}" "${WRK_CONNS:=8}" "${WARMUP:=2s}" "${COUNTED:=6s}"
: "${STORES:=memory}" "${KEEP:=}"

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v curl >/dev/null || missing+=(curl)
if (( ${#missing[@]} )); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
own_command=false
if (( $# == 0 )); then
  scripts/install-deps.sh
  swift build -c release --product topchrome >/dev/null
  set -- "$PWD/.build/release/topchrome" --port '{port}' --threads 1
  own_command=true
fi
[ -n "$KEEP" ] && mkdir -p "$KEEP" && KEEP=$(cd "$KEEP" && pwd)

source scripts/server.sh
work=$(mktemp -d)
pid=
redis_pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# count STORE COMMAND...: starts the server under callgrind and counts each workload.
count() {
  store=$1
  shift
  port=$(free_port)
  base="http://127.0.0.1:$port"
  command=("${@//\{port\}/$port}")
  # Counting starts off: start-up and session creation are not requests' cost.
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.%p" \
    "${command[@]}" >"$work/server.log" 2>&1 &
  pid=$!
  wait_answering "$base" "$pid" "$work/server.log" || exit 1
  create_sessions "$base" "$SESSIONS" "$work/ids" ${BEHAVIOR:-}
  export BENCH_LUA_DIR="$PWD/Benchmarks/wrk" IDS_FILE="$work/ids"
  if [ -n "${MINT:-}" ]; then
    $MINT "$work/ids" "$work/tokens"
    export TOKENS_FILE="$work/tokens"
  fi

  echo "# $(date -u +%Y-%m-%dT%H:%MZ) ${command[*]}"
  echo "# wrk -t1 -c$WRK_CONNS, $COUNTED counted after $WARMUP; instructions per request${BEHAVIOR:+; sessions $BEHAVIOR}"
  printf '%-8s %-8s %9s %12s %10s %10s\n' store workload requests all memset rest
  for workload in $WORKLOADS; do
    wrk -t1 -c"$WRK_CONNS" -d"$WARMUP" -s "$BENCH_LUA_DIR/$workload.lua" "$base" >/dev/null
    callgrind_control --zero "$pid" >/dev/null 2>&1
    callgrind_control --instr=on "$pid" >/dev/null 2>&1
    requests=$(wrk -t1 -c"$WRK_CONNS" -d"$COUNTED" -s "$BENCH_LUA_DIR/$workload.lua" "$base" |
      awk '/requests in/ { print $1 }')
    callgrind_control --instr=off "$pid" >/dev/null 2>&1
    rm -f "$work"/callgrind.*.*
    callgrind_control --dump="$workload" "$pid" >/dev/null 2>&1
    dump=
    for _ in $(seq 100); do  # the server writes the dump on a thread of its own; its last line is the total
      dump=$(ls "$work"/callgrind.*.* 2>/dev/null | head -n 1)
      [ -n "$dump" ] && grep -q '^totals:' "$dump" && break
      dump=
      sleep 0.1
    done
    [ -n "$dump" ] || { echo "no callgrind dump for $workload" >&2; exit 1; }
    [ -n "$KEEP" ] && cp "$dump" "$KEEP/$store-$workload.callgrind"
    python3 - "$store" "$workload" "$requests" "$dump" <<'PY' | tee -a "$work/counts"
import re, subprocess, sys
store, workload, requests, dump = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = open(dump).read()
total = int(re.findall(r"^(?:summary|totals): (\d+)", text, re.M)[-1])
# Self cost per function, as callgrind_annotate lists it.
listing = subprocess.run(["callgrind_annotate", "--threshold=100", dump], capture_output=True, text=True).stdout
memset = sum(int(m.group(1).replace(",", "")) for m in re.finditer(r"^\s*([\d,]+) .*:\S*memset\S* \[", listing, re.M))
print(f"{store:<8} {workload:<8} {requests:>9} {total / requests:>12.0f} {memset / requests:>10.0f} {(total - memset) / requests:>10.0f}")
PY
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  pid=
}

: > "$work/counts"
if ! $own_command; then
  count custom "$@"
else
  for store in $STORES; do
    case $store in
      memory) count memory "$@" ;;
      redis)
        redis_port=$(free_port)
        redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile "$work/redis.log" &
        redis_pid=$!
        for _ in $(seq 500); do redis-cli -p "$redis_port" PING 2>/dev/null | grep -q PONG && break; sleep 0.02; done
        count redis "$@" --store "redis://127.0.0.1:$redis_port"
        kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true
        redis_pid= ;;
      *) echo "bench-instructions: no store $store (memory, redis)" >&2; exit 2 ;;
    esac
  done
fi
# Both stores counted: the Redis store's cost per request against the memory store's (issue 26's target: <= 1.5x).
python3 - "$work/counts" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    store, workload, requests, total, memset, rest = line.split()
    rows[store, workload] = float(rest)
for (store, workload), rest in rows.items():
    if store == "redis" and ("memory", workload) in rows:
        ratio = rest / rows["memory", workload]
        print(f"redis/memory {workload}: {ratio:.2f}x instructions per request (target <= 1.5x): {'met' if ratio <= 1.5 else 'NOT met'}")
PY
