#!/usr/bin/env bash
# CPU per request of two servers taking turns under wrk, split into user and
# kernel time (docs/read-path.md, "User and kernel time apart").
#
# A round's total CPU per request moves ±10 % on these shared 2-core
# machines, mostly in the kernel's share (the loopback TCP both servers use
# alike); the user share, the servers' own code, moves far less. So besides
# the per-round ratio of totals, this prints the ratio the totals have when
# both are given the same kernel time (the median of both servers' rounds):
# what the difference in their own code makes of a request's CPU.
#
# Usage: scripts/bench-cpu-split.sh COMMAND_A [COMMAND_B]
#   Each COMMAND starts one server (one string, split on spaces), with
#   {port} where its port goes; any server that speaks the v1 API, e.g. a
#   reference build. COMMAND_B defaults to the release build at its
#   defaults, one thread.
# Settings (environment): WORKLOADS="scroll get mixed" ROUNDS=8 SESSIONS=1000
#   WRK_CONNS=32 DURATION=5s. Rounds alternate which server goes first.
#
# Takes 1–5 min, as every benchmark here (ROUNDS=8: about 5 min).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${WORKLOADS:=scroll get mixed}" "${ROUNDS:=8}" "${SESSIONS:=1000}" "${WRK_CONNS:=32}" "${DURATION:=5s}"
(( $# >= 1 && $# <= 2 )) || { sed -n '2,/^set /p' "$0" | sed '$d' >&2; exit 2; }
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
command_a=$1
if (( $# == 2 )); then
  command_b=$2
else
  scripts/install-deps.sh
  swift build -c release --product topchrome >/dev/null
  command_b="$PWD/.build/release/topchrome --port {port} --threads 1"
fi

source scripts/server.sh
work=$(mktemp -d)
pids=()
trap stop_started EXIT

# start NAME COMMAND: starts the server, waits until it answers, creates its sessions.
start() {
  local name=$1 port
  port=$(free_port)
  # Split on spaces on purpose: a command is one string.
  # shellcheck disable=SC2086
  ${2//\{port\}/$port} >"$work/$name.log" 2>&1 &
  pids+=($!)
  echo "$! http://127.0.0.1:$port" >"$work/$name.server"
  wait_answering "http://127.0.0.1:$port" "$!" "$work/$name.log" || exit 1
  create_sessions "http://127.0.0.1:$port" "$SESSIONS" "$work/$name.ids"
}

# cpu_ticks PID: user and kernel clock ticks of the whole process, every thread.
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }

# measure NAME WORKLOAD ROUND: one wrk run; appends "workload round name requests user kernel".
measure() {
  local name=$1 workload=$2 round=$3 pid base u0 k0 u1 k1 requests
  read -r pid base <"$work/$name.server"
  read -r u0 k0 < <(cpu_ticks "$pid")
  requests=$(IDS_FILE="$work/$name.ids" wrk -t1 -c"$WRK_CONNS" -d"$DURATION" -s "$BENCH_LUA_DIR/$workload.lua" "$base" |
    awk '/requests in/ { print $1 }')
  read -r u1 k1 < <(cpu_ticks "$pid")
  echo "$workload $round $name $requests $((u1 - u0)) $((k1 - k0))" >>"$work/runs"
}

start A "$command_a"
start B "$command_b"
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) A: $command_a"
echo "#                    B: $command_b"
echo "# wrk -t1 -c$WRK_CONNS -d$DURATION, $ROUNDS rounds a workload, $SESSIONS sessions; µs per request, medians"
: >"$work/runs"
for workload in $WORKLOADS; do
  for name in A B; do
    read -r _ base <"$work/$name.server"
    IDS_FILE="$work/$name.ids" wrk -t1 -c"$WRK_CONNS" -d1s -s "$BENCH_LUA_DIR/$workload.lua" "$base" >/dev/null
  done
  for round in $(seq "$ROUNDS"); do
    if (( round % 2 )); then order="A B"; else order="B A"; fi
    for name in $order; do measure "$name" "$workload" "$round"; done
  done
done
python3 - "$work/runs" "$(getconf CLK_TCK)" <<'PY'
import statistics as st, sys
runs, hz = {}, int(sys.argv[2])
for line in open(sys.argv[1]):
    workload, round_, name, requests, user, kernel = line.split()
    per = 1e6 / hz / int(requests)
    runs.setdefault(workload, {}).setdefault(round_, {})[name] = (int(user) * per, int(kernel) * per)
print(f"{'workload':8} {'A user':>7} {'B user':>7} {'B-A':>6} {'A kernel':>8} {'B kernel':>8} {'B/A total':>9} {'B/A, same kernel':>16}")
for workload, rounds in runs.items():
    a = [r["A"] for r in rounds.values()]
    b = [r["B"] for r in rounds.values()]
    ua, ub = st.median(u for u, _ in a), st.median(u for u, _ in b)
    ka, kb = st.median(k for _, k in a), st.median(k for _, k in b)
    total = st.median(sum(y) / sum(x) for x, y in zip(a, b))
    kernel = st.median([k for _, k in a] + [k for _, k in b])
    print(f"{workload:8} {ua:7.2f} {ub:7.2f} {ub - ua:+6.2f} {ka:8.2f} {kb:8.2f} {total:9.3f} {(kernel + ub) / (kernel + ua):16.3f}")
PY
