#!/usr/bin/env bash
# The Redis store's figures (Benchmarks/redis/README.md, issues 12 and 26):
#   1. the ceiling: redis-benchmark calling the library's apply itself, the
#      arguments a scroll report becomes: 32 connections pipelined 16 deep,
#      32 not pipelined, and one connection pipelined 32 deep (the shape one
#      replica's connection to a node allows), and after the replica's rounds
#      on one Redis, one connection as deep as the replica's calls arrived;
#   2. POST scroll through one replica (wrk, 32 connections) on the memory
#      store and on one Redis, in alternating rounds, and on a 3-primary
#      cluster (its rounds alternating with one Redis at a third of wrk's
#      connections, each primary's share): req/s, p99, CPU per request of
#      the replica and of Redis, how the cores were shared (replica, Redis,
#      wrk, the rest, idle), and how many calls Redis read per read of its
#      sockets;
#      beside the cluster's rounds, its ceiling: the same calls on one
#      connection per primary, wrk's requests in flight split over the
#      primaries;
#   3. a change on replica A seen by a watcher on replica B (1 watcher), and
#      by 1,000 watchers of one session spread over A and B;
#   4. Redis memory per session (MEMORY USAGE, used_memory per 100k);
#   5. instructions per scroll on each store (scripts/bench-instructions.sh);
#   6. libmicrohttpd's floor (scripts/bench-floor.sh): a C server on the
#      same library answering inline and after a call to Redis;
# then (Benchmarks/redis/report.py) each of issue 26's ratios with its
# target (and, where the floor or the depth the replica's calls arrive at
# is above a target, the nearest one it allows), and the capacity model:
# requests per second per core of replica and of Redis, and the cores
# 100,000 and 1,000,000 scroll reports per second need.
# Medians of RUNS runs. Starts its own redis-server(s) on free loopback
# ports and stops everything it started on exit. Missing a target is
# reported, not a failure; a non-2xx answer or a lost event is a failure.
#
# Settings (environment): RUNS=3 WRK_CONNS=32 WRK_DURATION=5s SESSIONS=1000
# CEILING_N=200000 (calls per redis-benchmark run) ROUNDS=20 (changes per
# latency run of 1,000 watchers) ROUNDS_ONE=200 (of 1 watcher) MEMORY_SESSIONS=100000
# THREADS= (replica --threads; default: cores) REDIS_CONNECTIONS= (replica
# --redis-connections on Redis; default: one per two cores, up to 4) LOG_LEVEL=info (the replicas'
# --log-level: info, the default users run, writes an access line per request)
# INSTRUCTIONS=1 (0 skips the callgrind counts, a minute under valgrind)
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RUNS:=3}" "${WRK_CONNS:=32}" "${WRK_DURATION:=5s}" "${SESSIONS:=1000}" "${CEILING_N:=200000}"
: "${ROUNDS:=20}" "${ROUNDS_ONE:=200}" "${MEMORY_SESSIONS:=100000}" "${THREADS:=}"
: "${LOG_LEVEL:=info}" "${INSTRUCTIONS:=1}" "${REDIS_CONNECTIONS:=}"

for tool in redis-server redis-cli redis-benchmark wrk; do
  command -v "$tool" >/dev/null || { echo "bench-redis: $tool is missing (scripts/install-deps.sh --test installs redis; apt-get install wrk)" >&2; exit 2; }
done
swift build -c release --product topchrome >/dev/null
binary=.build/release/topchrome
work=$(mktemp -d)
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$work/fanout" Benchmarks/fanout/fanout.c Benchmarks/fanout/measure.c Benchmarks/fanout/control.c Benchmarks/fanout/figures.c
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk"

source scripts/server.sh
pids=()  # everything started here, stopped on exit
trap stop_started EXIT
ulimit -n 4096 || { echo "bench-redis: 1,000 watchers need 4096 open files (ulimit -n)" >&2; exit 2; }

start_redis() {  # start_redis NAME [FLAGS...]: sets redis_pid and redis_port
  local name=$1 dir="$work/$1" attempt
  shift
  mkdir -p "$dir"
  # Redis has no --port 0: take a port the kernel just handed out, again if taken meanwhile.
  for attempt in 1 2 3 4 5; do
    redis_port=$(free_port)
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --dir "$dir" --logfile redis.log "$@" &
    redis_pid=$!
    for _ in $(seq 500); do
      redis-cli -p "$redis_port" PING 2>/dev/null | grep -q PONG && { pids+=("$redis_pid"); return 0; }
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.02
    done
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  done
  echo "bench-redis: redis-server $name did not start:" >&2
  tail -n 20 "$dir/redis.log" >&2
  exit 1
}

start_replica() {  # start_replica NAME STORE [FLAGS...]: sets replica_pid and replica_base
  local name=$1 store=$2
  shift 2
  local lanes=()
  [ "$store" != memory ] && [ -n "$REDIS_CONNECTIONS" ] && lanes=(--redis-connections "$REDIS_CONNECTIONS")
  start_topchrome "$binary" "$work/$name.log" --log-level "$LOG_LEVEL" --store "$store" ${THREADS:+--threads "$THREADS"} "${lanes[@]}" "$@" || exit 1
  pids+=("$server_pid")
  replica_pid=$server_pid
  replica_base=$base_url
  for _ in $(seq 1500); do  # ready = connected to Redis
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$replica_base/readyz")" = 200 ] && return 0
    sleep 0.02
  done
  echo "bench-redis: replica $name not ready: $(curl -s "$replica_base/readyz")" >&2
  cat "$work/$name.log" >&2
  exit 1
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

ticks_per_second=$(getconf CLK_TCK)

results="$work/results"  # one line per run: scenario rate p99_us replica_us redis_us replica% redis% wrk% rest% idle%
: > "$results"
wire="$work/wire"  # one line per run: scenario calls reads (FCALLs Redis ran, and the reads of its sockets it made)
: > "$wire"
# Redis's own counts, summed over PORTS: FCALLs run and socket reads made.
redis_ports=()
redis_counts() {
  local port calls=0 reads=0
  for port in "${redis_ports[@]}"; do
    calls=$(( calls + $(redis-cli -p "$port" INFO commandstats | sed -nE 's/^cmdstat_fcall:calls=([0-9]+),.*/\1/p' | grep . || echo 0) ))
    reads=$(( reads + $(redis-cli -p "$port" INFO stats | sed -nE 's/^total_reads_processed:([0-9]+).*/\1/p') ))
  done
  echo "$calls $reads"
}
# record_wire SCENARIO BEFORE: a line of $wire, the counts since BEFORE (an earlier redis_counts).
record_wire() {
  local calls0 reads0 calls1 reads1
  read -r calls0 reads0 <<<"$2"; read -r calls1 reads1 <<<"$(redis_counts)"
  echo "$1 $(( calls1 - calls0 )) $(( reads1 - reads0 ))" >>"$wire"
}

# wrk_scroll SCENARIO BASE REPLICA_PID REDIS_PIDS...: one measured wrk run of scroll.lua.
wrk_scroll() {
  local scenario=$1 base=$2 replica=$3
  shift 3
  local before_replica before_redis before_machine after_machine before_counts
  (( ${#redis_ports[@]} )) && before_counts=$(redis_counts)
  before_replica=$(proc_ticks "$replica"); before_redis=$(proc_ticks "$@"); before_machine=$(machine_ticks)
  # wrk's own CPU (its rusage, through a parent that waits for it).
  IDS_FILE="${IDS_FILE:-$work/ids}" python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], check=True, stdout=open(sys.argv[1] + ".txt", "w"))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1] + ".cpu", "w").write(str(usage.ru_utime + usage.ru_stime))' "$work/wrk" \
    wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" --latency -s "$BENCH_LUA_DIR/scroll.lua" "$base"
  after_machine=$(machine_ticks)
  (( ${#redis_ports[@]} )) && record_wire "$scenario" "$before_counts"
  python3 - "$scenario" "$work/wrk.txt" "$(( $(proc_ticks "$replica") - before_replica ))" \
    "$(( $(proc_ticks "$@") - before_redis ))" "$before_machine" "$after_machine" "$ticks_per_second" "$(nproc)" "$(cat "$work/wrk.cpu")" >>"$results" <<'PY'
import re, sys
scenario, text = sys.argv[1], open(sys.argv[2]).read()
replica, redis = int(sys.argv[3]), int(sys.argv[4])
busy0, idle0 = map(int, sys.argv[5].split()); busy1, idle1 = map(int, sys.argv[6].split())
hz, cores, wrk = int(sys.argv[7]), int(sys.argv[8]), float(sys.argv[9]) * int(sys.argv[7])
def micros(label):
    value, unit = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    return float(value) * {"us": 1, "ms": 1000, "s": 1e6}[unit]
requests = int(re.search(r"(\d+) requests in", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
if errors or re.search(r"Socket errors", text):
    sys.exit(f"bench-redis: {scenario}: wrk saw errors:\n{text}")
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
total = (busy1 - busy0) + (idle1 - idle0)  # all cores' ticks in the run
share = lambda ticks: 100 * cores * ticks / max(total, 1)  # % of one core
rest = (busy1 - busy0) - replica - redis - wrk
print(scenario, f"{rate:.0f}", f"{micros(99):.0f}", f"{replica / hz * 1e6 / requests:.2f}", f"{redis / hz * 1e6 / requests:.2f}",
      f"{share(replica):.0f}", f"{share(redis):.0f}", f"{share(wrk):.0f}", f"{share(rest):.0f}", f"{share(idle1 - idle0):.0f}")
PY
}

# flip_round NAME PORT[,PORT...] DEPTH REDIS_PIDS...: one counted run of
# flip-ceiling.py (CEILING_N calls, DEPTH at once a node), a row of $results
# (Redis's CPU per call) and of $wire.
flip_round() {
  local name=$1 ports=$2 depth=$3 before_redis before_counts calls seconds ticks
  shift 3
  before_redis=$(proc_ticks "$@")
  before_counts=$(redis_counts)
  read -r calls seconds <<<"$(python3 Benchmarks/redis/flip-ceiling.py "$ports" "$library_name" "$CEILING_N" "$depth")"
  ticks=$(( $(proc_ticks "$@") - before_redis ))
  record_wire "$name" "$before_counts"
  python3 -c 'import sys; name, calls, seconds, ticks, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]); print(name, f"{calls / seconds:.0f}", "-", "-", f"{ticks / hz * 1e6 / calls:.2f}", "-", "-", "-", "-", "-")' \
    "$name" "$calls" "$seconds" "$ticks" "$ticks_per_second" >>"$results"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(redis-server --version | cut -d' ' -f1-3)"
echo "# load: $(uptime)"

# --- one Redis -----------------------------------------------------------------
start_redis single
single_port=$redis_port single_pid=$redis_pid
library_name=$(load_library "$single_port")
# Its functions are named after it: topchrome_source_apply... (the service loads the same text under a digest name)
export library_name

# What the replica sends for one scroll report, seen by MONITOR: the ceiling calls the same.
start_replica a "redis://127.0.0.1:$single_port"
a_pid=$replica_pid a_base=$replica_base
create_sessions "$a_base" 1 "$work/one"
redis-cli -p "$single_port" MONITOR >"$work/monitor.txt" &
monitor_pid=$!
pids+=("$monitor_pid")
sleep 0.2
curl -sf -o /dev/null -H 'Content-Type: application/json' -d '{"contentOffsetY":379.5,"seq":7}' "$a_base/v1/sessions/$(cat "$work/one")/scroll"
sleep 0.2
stop_pid "$monitor_pid"
echo "one scroll report, as Redis received it:$(grep -m1 -o '"FCALL".*' "$work/monitor.txt")"

# --- 1. the ceiling --------------------------------------------------------------
redis_ports=("$single_port")
# 1,000 sessions topchrome:{000000000000}... (redis-benchmark's __rand_int__ is 12
# digits); the report's offset is random too, with insetTop -499, so the effective
# offset is at most the threshold (1) about half the time and about half of
# the calls flip the session (HSET + SPUBLISH, as every wrk request does below).
python3 - <<'PY' | redis-cli -p "$single_port" --pipe >/dev/null
import sys
def resp(*words):
    out = [f"*{len(words)}\r\n"] + [f"${len(w.encode())}\r\n{w}\r\n" for w in words]
    return "".join(out)
import os
create = os.environ["library_name"] + "_create"
sys.stdout.write("".join(resp("FCALL", create, "1", "topchrome:{%012d}" % i, "0123456789ab", "4102444800000", "3600000", "0") for i in range(1000)))
PY
# A tag and a deadline (2100-01-01, in ms) as a replica sends them: the deadline makes the function read TIME, as the replica's calls do.
ceiling_args=(FCALL "${library_name}_apply" 1 'topchrome:{__rand_int__}' 0123456789ab 4102444800000 3600000 1.0 0 r __rand_int__ -499.0 v)
for shape in "32 16" "32 1" "1 32"; do
  read -r connections pipeline <<<"$shape"
  for run in $(seq "$RUNS"); do
    before_redis=$(proc_ticks "$single_pid")
    before_counts=$(redis_counts)
    line=$(redis-benchmark -p "$single_port" -c "$connections" -P "$pipeline" -n "$CEILING_N" -r 1000 --csv "${ceiling_args[@]}" | tail -n 1)
    python3 - "$line" "$connections" "$pipeline" "$(( $(proc_ticks "$single_pid") - before_redis ))" "$ticks_per_second" "$CEILING_N" >>"$results" <<'PY'
import csv, sys
row = next(csv.reader([sys.argv[1]]))
connections, pipeline, ticks, hz, calls = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
# rps, avg, min, p50, p95, p99, max (ms)
print(f"ceiling-c{connections}-P{pipeline}", f"{float(row[1]):.0f}", f"{float(row[6]) * 1000:.0f}", "-", f"{ticks / hz * 1e6 / calls:.2f}", "-", "-", "-", "-", "-")
PY
    record_wire "ceiling-c$connections-P$pipeline" "$before_counts"
  done
done
# The same depth with the replica's own calls, each changing its session as
# every wrk request does (redis-benchmark's change about half): issue 26's
# ceiling for Redis's CPU per call from one replica's connection.
python3 Benchmarks/redis/flip-ceiling.py "$single_port" "$library_name" 0 >/dev/null  # its sessions, made before the counting
for run in $(seq "$RUNS"); do flip_round flip-c1-P32 "$single_port" 32 "$single_pid"; done

# --- 2. scroll through one replica on the memory store and on one Redis ------------
# Alternating rounds, so that whatever else loads the machine weighs on both alike.
start_replica memory memory
memory_pid=$replica_pid memory_base=$replica_base
create_sessions "$memory_base" "$SESSIONS" "$work/memory-ids"
create_sessions "$a_base" "$SESSIONS" "$work/ids"
IDS_FILE="$work/memory-ids" wrk -t1 -c"$WRK_CONNS" -d2s -s "$BENCH_LUA_DIR/scroll.lua" "$memory_base" >/dev/null  # warm-up
IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d2s -s "$BENCH_LUA_DIR/scroll.lua" "$a_base" >/dev/null
for run in $(seq "$RUNS"); do
  redis_ports=()
  IDS_FILE="$work/memory-ids" wrk_scroll memory "$memory_base" "$memory_pid"
  redis_ports=("$single_port")
  IDS_FILE="$work/ids" wrk_scroll single "$a_base" "$a_pid" "$single_pid"
done
# The replica's calls reach Redis as deep as wrk's requests in flight bring
# them: one connection written that deep (the median calls per read of the
# rounds above) is the ceiling at the replica's own depth (1').
replica_depth=$(python3 -c 'import statistics, sys
depths = [int(c) / max(int(r), 1) for n, c, r in (line.split() for line in open(sys.argv[1])) if n == "single"]
print(max(1, round(statistics.median(depths))) if depths else 1)' "$wire")
for run in $(seq "$RUNS"); do flip_round "flip-depth-P$replica_depth" "$single_port" "$replica_depth" "$single_pid"; done
stop_pid "$memory_pid"

# --- 3. change on A -> event on B -------------------------------------------------
# One session, its watchers spread over A and B; B's per-session watcher limit
# (default 64) raised so 1,000 watchers of one session fit.
start_replica b "redis://127.0.0.1:$single_port" --max-watchers-per-session 2000 --heartbeat 3600
b_pid=$replica_pid b_base=$replica_base
stop_pid "$a_pid"
start_replica a "redis://127.0.0.1:$single_port" --max-watchers-per-session 2000 --heartbeat 3600
a_pid=$replica_pid a_base=$replica_base
for watchers in 1 1000; do
  ports=${b_base##*:}
  [ "$watchers" -gt 1 ] && ports="${a_base##*:},${b_base##*:}"
  rounds=$ROUNDS
  [ "$watchers" = 1 ] && rounds=$ROUNDS_ONE
  for run in $(seq "$RUNS"); do
    "$work/fanout" -p "${a_base##*:}" -w "$ports" -n "$watchers" -r "$rounds" -P "$b_pid" -g 50 -s 200 -v >"$work/fanout.txt" \
      || { cat "$work/fanout.txt" "$work/a.log" "$work/b.log" >&2; exit 1; }
    grep '^RESULT ' "$work/fanout.txt" >>"$work/fanout-rows"
    # One watcher: each change's latency, pooled over the runs.
    [ "$watchers" = 1 ] && sed -nE 's/.*round +[0-9]+: min +([0-9.]+).*/\1/p' "$work/fanout.txt" >>"$work/one-watcher"
  done
done
stop_pid "$a_pid"; stop_pid "$b_pid"

# --- 4. memory per session ---------------------------------------------------------
start_replica a "redis://127.0.0.1:$single_port"
a_base=$replica_base
create_sessions "$a_base" 1 "$work/one"
curl -sf -o /dev/null -H 'Content-Type: application/json' -d '{"contentOffsetY":379.5,"seq":123456}' "$a_base/v1/sessions/$(cat "$work/one")/scroll"
key="topchrome:{$(cat "$work/one")}"
memory_line="MEMORY USAGE $key: $(redis-cli -p "$single_port" MEMORY USAGE "$key") bytes, $(redis-cli -p "$single_port" OBJECT ENCODING "$key"), fields: $(redis-cli -p "$single_port" HGETALL "$key" | paste -sd' '), TTL $(redis-cli -p "$single_port" PTTL "$key") ms; hash-max-listpack-entries $(redis-cli -p "$single_port" CONFIG GET hash-max-listpack-entries | tail -n 1), -value $(redis-cli -p "$single_port" CONFIG GET hash-max-listpack-value | tail -n 1)"
redis-cli -p "$single_port" FLUSHALL >/dev/null
sleep 0.5
used_before=$(redis-cli -p "$single_port" INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
# MEMORY_SESSIONS sessions as the replicas make them (random 32-hex ids, TTL 1 h),
# each then given a scroll report with a seq, through the same functions.
python3 - "$MEMORY_SESSIONS" <<'PY' | redis-cli -p "$single_port" --pipe >/dev/null
import os, sys
def resp(*words):
    return f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
out = []
for _ in range(int(sys.argv[1])):
    key = "topchrome:{%s}" % os.urandom(16).hex()
    out.append(resp("FCALL", os.environ["library_name"] + "_create", "1", key, "0123456789ab", "4102444800000", "3600000", "0"))
    out.append(resp("FCALL", os.environ["library_name"] + "_apply", "1", key, "0123456789ab", "4102444800000", "3600000", "1.0", "0", "q", "379.5", "0", "v", "123456"))
sys.stdout.write("".join(out))
PY
used_after=$(redis-cli -p "$single_port" INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
keys=$(redis-cli -p "$single_port" DBSIZE)
memory_delta_line=$(awk -v b="$used_before" -v a="$used_after" -v n="$keys" 'BEGIN { printf "used_memory: +%.1f MiB for %d sessions (with TTL and seq): %.1f bytes per session, %.1f MB per 100k", (a-b)/1048576, n, (a-b)/n, (a-b)/n*100000/1e6 }')
stop_pid "$replica_pid"

# --- 2b. scroll through one replica on a 3-primary cluster --------------------------
primary_count=3
per_primary=$(( (WRK_CONNS + primary_count - 1) / primary_count ))
cluster_ports=() cluster_pids=()
for node in $(seq "$primary_count"); do
  start_redis "node$node" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 --cluster-port "$(free_port)"
  cluster_ports+=("$redis_port"); cluster_pids+=("$redis_pid")
done
redis-cli --cluster create "${cluster_ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$work/cluster-create.txt" \
  || { cat "$work/cluster-create.txt" >&2; exit 1; }
for _ in $(seq 500); do
  ok=0
  for port in "${cluster_ports[@]}"; do redis-cli -p "$port" CLUSTER INFO | grep -q 'cluster_state:ok' && ok=$((ok + 1)); done
  [ "$ok" = "$primary_count" ] && break
  sleep 0.05
done
[ "$ok" = "$primary_count" ] || { echo "bench-redis: the cluster did not come up" >&2; exit 1; }
seeds=$(printf '127.0.0.1:%s,' "${cluster_ports[@]}")
start_replica a "redis://${seeds%,}"
a_pid=$replica_pid a_base=$replica_base
create_sessions "$a_base" "$SESSIONS" "$work/ids"
# The replica's sessions per primary (before the ceiling's own): wrk calls
# each session as often, so the calls can spread no evener than these.
spread=$(for port in "${cluster_ports[@]}"; do redis-cli -p "$port" DBSIZE; done | paste -sd/)
IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d2s -s "$BENCH_LUA_DIR/scroll.lua" "$a_base" >/dev/null  # warm-up
node_calls() { local port; for port in "${cluster_ports[@]}"; do redis_ports=("$port"); redis_counts | cut -d' ' -f1; done | paste -sd' '; }
# The cluster's ceiling at the replica's depth: wrk's requests in flight
# split over the primaries, each primary's share written at once on one
# connection (as deep as those requests allow, on average).
for port in "${cluster_ports[@]}"; do load_library "$port" >/dev/null; done
flip_cluster="flip-cluster-${#cluster_ports[@]}x$per_primary"
primaries=$(IFS=,; echo "${cluster_ports[*]}")
python3 Benchmarks/redis/flip-ceiling.py "$primaries" "$library_name" 0 >/dev/null  # its sessions, made before the counting
# One Redis at the requests in flight each primary gets (wrk's connections
# split three ways), in rounds alternating with the cluster's: the
# cluster's cost per call against one Redis at the same load per node (4'').
start_replica shared "redis://127.0.0.1:$single_port"
shared_pid=$replica_pid shared_base=$replica_base
create_sessions "$shared_base" "$SESSIONS" "$work/shared-ids"
IDS_FILE="$work/shared-ids" wrk -t1 -c"$per_primary" -d2s -s "$BENCH_LUA_DIR/scroll.lua" "$shared_base" >/dev/null  # warm-up
replica_calls=()  # the replica's calls per primary, over its rounds only
for i in "${!cluster_ports[@]}"; do replica_calls[i]=0; done
for run in $(seq "$RUNS"); do
  calls_before=($(node_calls))
  redis_ports=("${cluster_ports[@]}")
  wrk_scroll cluster "$a_base" "$a_pid" "${cluster_pids[@]}"
  calls_after=($(node_calls))
  for i in "${!cluster_ports[@]}"; do replica_calls[i]=$(( replica_calls[i] + calls_after[i] - calls_before[i] )); done
  redis_ports=("${cluster_ports[@]}")
  flip_round "$flip_cluster" "$primaries" "$per_primary" "${cluster_pids[@]}"
  redis_ports=("$single_port")
  IDS_FILE="$work/shared-ids" WRK_CONNS=$per_primary wrk_scroll "single-c$per_primary" "$shared_base" "$shared_pid" "$single_pid"
done
stop_pid "$a_pid"; stop_pid "$shared_pid"; stop_pid "$single_pid"

# --- 5. instructions per scroll on each store -------------------------------------------
instructions="$work/instructions.txt"
: > "$instructions"
if [ "$INSTRUCTIONS" = 1 ]; then
  STORES="memory redis" WORKLOADS=scroll scripts/bench-instructions.sh >"$instructions" 2>&1 \
    || { cat "$instructions" >&2; exit 1; }
fi

# --- 6. libmicrohttpd's floor ---------------------------------------------------------------
floor="$work/floor.txt"
RUNS=$RUNS WRK_CONNS=$WRK_CONNS WRK_DURATION=$WRK_DURATION SESSIONS=$SESSIONS THREADS=${THREADS:-$(nproc)} \
  REDIS_CONNECTIONS=$REDIS_CONNECTIONS LOG_LEVEL=$LOG_LEVEL INSTRUCTIONS=$INSTRUCTIONS scripts/bench-floor.sh >"$floor" 2>"$work/floor.err" \
  || { cat "$floor" "$work/floor.err" >&2; exit 1; }

# --- report ----------------------------------------------------------------------------
echo "# load after: $(uptime)"
echo
echo "Runs (scroll: wrk -t1 -c$WRK_CONNS -d$WRK_DURATION over $SESSIONS sessions; ceiling: redis-benchmark -n $CEILING_N -r 1000):"
printf '%-18s %9s %8s %12s %10s %9s %7s %6s %7s %6s\n' scenario "req/s" "p99 µs" "replica µs/r" "Redis µs/r" "replica%" "Redis%" "wrk%" "rest%" "idle%"
while read -r row; do printf '%-18s %9s %8s %12s %10s %9s %7s %6s %7s %6s\n' $row; done <"$results"
echo "(% = share of one core during the run; rest = everything else on the machine; the ceiling rows: Redis CPU per call)"
echo
python3 Benchmarks/redis/report.py --results "$results" --wire "$wire" --instructions "$instructions" \
  --replica-calls "${replica_calls[*]}" --flip-cluster "$flip_cluster" --floor "$floor" --cores "$(nproc)" --spread "$spread" \
  --shared "single-c$per_primary" --at-depth "flip-depth-P$replica_depth" --fanout-rows "$work/fanout-rows" \
  --one-watcher "$work/one-watcher" --rounds "$ROUNDS"
echo
echo "Memory in Redis:"
echo "  $memory_line"
echo "  $memory_delta_line"
