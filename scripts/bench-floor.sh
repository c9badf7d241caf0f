#!/usr/bin/env bash
# What answering later costs on libmicrohttpd (Benchmarks/redis/README.md "The floor of
# answering later", issue 26's ratio 2b): CPU per request of
#   - TopChrome on the memory store and on one Redis, and
#   - Benchmarks/floor/floor.c, a C server on the same library with the same
#     flags, answering in the request's callback ("inline"), after a hand-off
#     to a thread that resumes it at once ("later"), and after one pipelined
#     call to the same Redis over hiredis ("redis": TopChrome's own library
#     function and arguments, so that Redis works as hard for either server),
# in alternating rounds of wrk -c32 POST scroll, each server alone on the
# machine with its Redis. The C server's redis / inline is the least any
# server on libmicrohttpd pays for a store in another process: suspend and
# resume, a thread's wake-up, and the socket to Redis, mostly in the kernel.
#
# Then, with INSTRUCTIONS=1, the C server's instructions per scroll under
# callgrind (scripts/bench-instructions.sh, one thread) inline and on Redis.
#
# Settings (environment): RUNS=3 WRK_CONNS=32 WRK_DURATION=5s SESSIONS=1000
# THREADS= (both servers' worker threads; default: cores) REDIS_CONNECTIONS=
# (TopChrome's --redis-connections) LOG_LEVEL=info INSTRUCTIONS=1
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RUNS:=3}" "${WRK_CONNS:=32}" "${WRK_DURATION:=5s}" "${SESSIONS:=1000}" "${THREADS:=$(nproc)}"
: "${REDIS_CONNECTIONS:=}" "${LOG_LEVEL:=info}" "${INSTRUCTIONS:=1}"

for tool in redis-server redis-cli wrk gcc; do
  command -v "$tool" >/dev/null || { echo "bench-floor: $tool is missing (scripts/install-deps.sh --test installs redis; apt-get install wrk gcc)" >&2; exit 2; }
done
swift build -c release --product topchrome >/dev/null
binary=.build/release/topchrome
work=$(mktemp -d)
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$work/floor" Benchmarks/floor/floor.c -lmicrohttpd -lhiredis -lpthread
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk"
source scripts/server.sh

pids=()
trap stop_started EXIT

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile "$work/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 500); do redis-cli -p "$redis_port" PING 2>/dev/null | grep -q PONG && break; sleep 0.02; done
library_name=$(load_library "$redis_port")  # for the C server

ticks_per_second=$(getconf CLK_TCK)
results="$work/results"  # one line per round: server requests/s server_us redis_us idle%
: > "$results"

# start SERVER: starts it on a free port; sets pid and base.
start() {
  case $1 in
    memory|redis)
      local store=memory lanes=()
      if [ "$1" = redis ]; then
        store="redis://127.0.0.1:$redis_port"
        [ -n "$REDIS_CONNECTIONS" ] && lanes=(--redis-connections "$REDIS_CONNECTIONS")
      fi
      start_topchrome "$binary" "$work/$1.log" --log-level "$LOG_LEVEL" --store "$store" --threads "$THREADS" "${lanes[@]}" || exit 1
      pid=$server_pid base=$base_url ;;
    c-*)
      local port
      port=$(free_port)
      "$work/floor" "${1#c-}" "$port" "$THREADS" "$redis_port" "$library_name" 2>"$work/$1.log" &
      pid=$! base="http://127.0.0.1:$port" ;;
  esac
  pids+=("$pid")
  # Ready: TopChrome once connected to Redis; the C server once it answers at all.
  for _ in $(seq 500); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && return 0
    sleep 0.02
  done
  echo "bench-floor: $1 did not start" >&2; cat "$work/$1.log" >&2; exit 1
}

servers=(memory redis c-inline c-later c-redis)
for run in $(seq "$RUNS"); do
  for server in "${servers[@]}"; do
    start "$server"
    create_sessions "$base" "$SESSIONS" "$work/ids"
    IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d1s -s "$BENCH_LUA_DIR/scroll.lua" "$base" >/dev/null  # warm-up
    before=$(proc_ticks "$pid"); before_redis=$(proc_ticks "$redis_pid"); before_machine=$(machine_ticks)
    IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" -s "$BENCH_LUA_DIR/scroll.lua" "$base" >"$work/wrk.txt"
    server_ticks=$(( $(proc_ticks "$pid") - before )); redis_ticks=$(( $(proc_ticks "$redis_pid") - before_redis ))
    after_machine=$(machine_ticks)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    python3 - "$server" "$work/wrk.txt" "$server_ticks" "$redis_ticks" "$ticks_per_second" "$before_machine" "$after_machine" >>"$results" <<'PY'
import re, sys
server, text, ticks, redis, hz = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
busy0, idle0 = map(int, sys.argv[6].split()); busy1, idle1 = map(int, sys.argv[7].split())
idle = 100 * (idle1 - idle0) / max((busy1 - busy0) + (idle1 - idle0), 1)
if re.search(r"Non-2xx or 3xx responses|Socket errors", text):
    sys.exit(f"bench-floor: {server}: wrk saw errors:\n{text}")
requests = int(re.search(r"(\d+) requests in", text).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
print(server, f"{rate:.0f}", f"{ticks / hz * 1e6 / requests:.2f}", f"{redis / hz * 1e6 / requests:.2f}", f"{idle:.0f}")
PY
  done
done

instructions="$work/instructions"
: > "$instructions"
if [ "$INSTRUCTIONS" = 1 ]; then
  for mode in inline redis; do
    # At bench-instructions' own wrk -c8, as TopChrome's counts are taken.
    WRK_CONNS=8 WORKLOADS=scroll scripts/bench-instructions.sh "$work/floor" "$mode" {port} 1 "$redis_port" "$library_name" >"$work/count.txt" 2>&1 \
      || { cat "$work/count.txt" >&2; exit 1; }
    echo "$mode $(awk '$1 == "custom" && $2 == "scroll" { print $6 }' "$work/count.txt")" >>"$instructions"
  done
fi

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# wrk -t1 -c$WRK_CONNS -d$WRK_DURATION POST scroll, $RUNS alternating rounds, --threads $THREADS; medians"
python3 - "$results" "$instructions" <<'PY'
import statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    server, rate, cpu, redis, idle = line.split()
    rows.setdefault(server, []).append((float(rate), float(cpu), float(redis), float(idle)))
    order.append((server, float(cpu)))
med = lambda server, column: statistics.median(r[column] for r in rows[server])
labels = {"memory": "TopChrome, memory store", "redis": "TopChrome, one Redis", "c-inline": "C floor, answered inline",
          "c-later": "C floor, handed to a thread", "c-redis": "C floor, one Redis"}
print(f"  {'server':<30} {'req/s':>8} {'CPU µs/req':>11} {'Redis µs/call':>14} {'machine idle':>13}")
for server, label in labels.items():
    redis = med(server, 2)
    print(f"  {label:<30} {med(server, 0):>8.0f} {med(server, 1):>11.2f} {(f'{redis:.2f}' if redis > 0.5 else '-'):>14} {med(server, 3):>12.0f}%")
# Each round's ratio, from the servers measured side by side in it; then the median.
rounds = [dict() for _ in range(len(order) // len(labels))]
for index, (server, cpu) in enumerate(order):
    rounds[index // len(labels)][server] = cpu
ratio = lambda a, b: statistics.median(r[a] / r[b] for r in rounds)
swift, floor, later = ratio("redis", "memory"), ratio("c-redis", "c-inline"), ratio("c-later", "c-inline")
print(f"  CPU per request, TopChrome Redis / memory store: {swift:.2f}x")
print(f"  CPU per request, C floor one Redis / inline: {floor:.2f}x (handed to a thread alone: {later:.2f}x)")
print(f"  CPU per request, TopChrome against the C floor: Redis {ratio('redis', 'c-redis'):.2f}x, memory store {ratio('memory', 'c-inline'):.2f}x")
print(f"  machine idle: TopChrome Redis {med('redis', 3):.0f}%, C floor one Redis {med('c-redis', 3):.0f}%")
counts = dict(line.split() for line in open(sys.argv[2]))
if counts:
    inline, redis = float(counts["inline"]), float(counts["redis"])
    print(f"  instructions per scroll, C floor (callgrind, one thread, memset apart): inline {inline / 1000:.1f} k,"
          f" one Redis {redis / 1000:.1f} k = {redis / inline:.2f}x")
PY
