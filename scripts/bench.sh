#!/usr/bin/env bash
# The performance figures of BENCHMARKS.md: HTTP throughput and latency with
# wrk (scroll, get, mixed over 1000 sessions) with the server's CPU per
# request, time from exec to ready (of the release build and of the static,
# stripped binary the image ships, with that binary's size),
# memory per session at 1,000,000 sessions, and the core's cost per report.
# Fails on any non-2xx answer during the HTTP workloads.
#
# Settings (environment): WRK_THREADS=1 WRK_CONNS=32 WRK_DURATION=5s
# SESSIONS=1000 MEMORY_SESSIONS=1000000 THREADS= (server --threads; default: cores)
# WORKLOADS="scroll get mixed" SKIP_MEMORY=0
# BEHAVIORS="revealAtTop pinned enterAlways exitUntilCollapsed": the scroll
# workload again on sessions created with each (at --log-level warn); "" skips it.
# LOG_LEVELS="warn info": the HTTP workloads run once per server --log-level;
# `info` is the default, an access-log line per request, written to a file.
#
# Takes 1–5 min, as every benchmark here (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${WRK_THREADS:=1}" "${WRK_CONNS:=32}" "${WRK_DURATION:=5s}" "${SESSIONS:=1000}"
: "${MEMORY_SESSIONS:=1000000}" "${THREADS:=}" "${WORKLOADS:=scroll get mixed}" "${SKIP_MEMORY:=0}"
: "${LOG_LEVELS:=warn info}"
: "${BEHAVIORS=revealAtTop pinned enterAlways exitUntilCollapsed}"

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
scripts/install-deps.sh
# One product per call: given several, swift build builds only the last.
swift build -c release --product topchrome >/dev/null
swift build -c release --product TopChromeBench >/dev/null
binary=.build/release/topchrome
# The image's binary (static Swift stdlib, stripped), built in .build/static.
failed_binary=0
Tests/scripts/check-binary.sh >/dev/null || failed_binary=1
image_binary=.build/static/topchrome.stripped
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk"

source scripts/server.sh
start_server() {  # start_server LEVEL ARGS...: sets server_pid and base
  local level=$1
  shift
  start_topchrome "$binary" "$work/server.log" --log-level "$level" ${THREADS:+--threads "$THREADS"} "$@" || exit 1
  base=$base_url
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# The server's CPU per request (proc_ticks, scripts/server.sh) is its cost:
# unlike req/s, it does not stop at what the client can send.

# One table row from wrk's --latency output: LABEL req/s p50 p99 CPU-per-request non-2xx; fails on any non-2xx.
# wrk_row LABEL WRK_OUTPUT TICKS [sockets [CPU_LOG KEY]]: `sockets` also reports and fails on socket errors;
# CPU_LOG gets "KEY cpu" appended.
wrk_row() {
  python3 - "$1" "$2" "$3" "$(getconf CLK_TCK)" "${4:-}" "${5:-}" "${6:-}" <<'PY'
import re, sys
label, text = sys.argv[1], open(sys.argv[2]).read()
ticks, ticks_per_second = int(sys.argv[3]), int(sys.argv[4])
check_sockets, cpu_log, key = sys.argv[5] == "sockets", sys.argv[6], sys.argv[7]
def micros(label):
    match = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    value, unit = float(match.group(1)), match.group(2)
    return value * {"us": 1, "ms": 1000, "s": 1e6}[unit]
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
non2xx = int(errors.group(1)) if errors else 0
socket = re.search(r"Socket errors: (.*)", text) if check_sockets else None
requests = int(re.search(r"(\d+) requests in", text).group(1))
cpu = ticks / ticks_per_second * 1e6 / max(requests, 1)
print(f"{label} {rate:>10.0f} {micros(50):>9.0f} {micros(99):>9.0f} {cpu:>13.2f} {non2xx:>7}" + (f"  socket errors: {socket.group(1)}" if socket else ""))
if cpu_log:
    with open(cpu_log, "a") as out:
        out.write(f"{key} {cpu}\n")
sys.exit(1 if non2xx or socket else 0)
PY
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), wrk -t$WRK_THREADS -c$WRK_CONNS -d$WRK_DURATION"

# --- HTTP workloads ----------------------------------------------------------
printf '%-8s %-5s %10s %9s %9s %13s %7s\n' workload log "req/s" "p50 µs" "p99 µs" "CPU µs/req" non2xx
failed=0
: > "$work/cpu"
for level in $LOG_LEVELS; do
  start_server "$level"
  create_sessions "$base" "$SESSIONS" "$work/ids"
  IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d2s -s "$BENCH_LUA_DIR/mixed.lua" "$base" >/dev/null  # warm-up
  for workload in $WORKLOADS; do
    ticks_before=$(proc_ticks "$server_pid")
    IDS_FILE="$work/ids" wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"$WRK_DURATION" --latency \
      -s "$BENCH_LUA_DIR/$workload.lua" "$base" >"$work/$workload.txt"
    ticks=$(( $(proc_ticks "$server_pid") - ticks_before ))
    wrk_row "$(printf '%-8s %-5s' "$workload" "$level")" "$work/$workload.txt" "$ticks" sockets \
      "$work/cpu" "$workload $level" || failed=1
  done
  stop_server
  rm -f "$work/server.log"
done
# What the access log costs: CPU per request at each level against the first (one run each; compare.sh-style
# alternation is what separates a few per cent).
python3 - "$work/cpu" "$LOG_LEVELS" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
levels = sys.argv[2].split()
cpu = {(w, l): float(c) for w, l, c in rows}
for level in levels[1:]:
    ratios = [f"{w} {cpu[(w, level)] / cpu[(w, levels[0])]:.3f}" for w, l in cpu if l == levels[0] and (w, level) in cpu]
    print(f"CPU per request, --log-level {level} / {levels[0]}: " + ", ".join(ratios))
PY

# --- the scroll path for each reveal behaviour --------------------------------
# Sessions created with the behaviour (inset 100); scroll.lua's reports swing
# between 379.5 and 0.5, so every behaviour's chrome moves on every report.
if [ -n "$BEHAVIORS" ]; then
  printf '%-26s %10s %9s %9s %13s %7s\n' "scroll, behaviour" "req/s" "p50 µs" "p99 µs" "CPU µs/req" non2xx
  for behavior in $BEHAVIORS; do
    start_server warn
    create_sessions "$base" "$SESSIONS" "$work/ids" "$behavior"
    IDS_FILE="$work/ids" wrk -t1 -c"$WRK_CONNS" -d2s -s "$BENCH_LUA_DIR/scroll.lua" "$base" >/dev/null  # warm-up
    ticks_before=$(proc_ticks "$server_pid")
    IDS_FILE="$work/ids" wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"$WRK_DURATION" --latency \
      -s "$BENCH_LUA_DIR/scroll.lua" "$base" >"$work/behavior.txt"
    ticks=$(( $(proc_ticks "$server_pid") - ticks_before ))
    wrk_row "$(printf '%-26s' "scroll $behavior")" "$work/behavior.txt" "$ticks" sockets || failed=1
    stop_server
    rm -f "$work/server.log"
  done
fi

# --- time from exec to ready -------------------------------------------------
awk -v s="$(stat -c %s "$image_binary")" 'BEGIN { printf "image binary: %.1f MB (%d bytes; static Swift stdlib, stripped)\n", s/1e6, s }'
for ready_binary in "$binary" "$image_binary"; do
python3 - "$ready_binary" <<'PY'
import socket, statistics, subprocess, sys, time
def ready_ms():
    probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
    start = time.perf_counter()
    server = subprocess.Popen([sys.argv[1], "--port", str(port), "--log-level", "warn"], stdout=subprocess.DEVNULL)
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    elapsed = (time.perf_counter() - start) * 1000
                    break
        except OSError:
            time.sleep(0.0002)
    server.terminate(); server.wait()
    return elapsed
runs = sorted(ready_ms() for _ in range(15))
print(f"ready after exec ({sys.argv[1]}): median {statistics.median(runs):.1f} ms (min {runs[0]:.1f}, max {runs[-1]:.1f}, 15 runs)")
PY
done

# --- memory per session ------------------------------------------------------
if [ "$SKIP_MEMORY" != 1 ]; then
  start_server warn --max-sessions "$MEMORY_SESSIONS"
  before=$(rss_kib "$server_pid")
  while :; do
    count=$(curl -s "$base/metrics" | awk '$1 == "topchrome_sessions" {print $2}')
    [ "$count" -ge "$MEMORY_SESSIONS" ] && break
    wrk -t1 -c32 -d3s -s "$BENCH_LUA_DIR/create.lua" "$base" >/dev/null
  done
  after=$(rss_kib "$server_pid")
  python3 -c "import sys; b,a,n=map(int,sys.argv[1:]); print(f'memory: VmRSS {b/1024:.1f} -> {a/1024:.1f} MiB with {n} sessions: {(a-b)*1024/n:.1f} bytes per session')" "$before" "$after" "$count"
  stop_server
fi

# --- the core without HTTP -----------------------------------------------------
.build/release/TopChromeBench
[ "$failed_binary" -eq 0 ] || echo "Tests/scripts/check-binary.sh failed: run it for the reason" >&2
exit $(( failed || failed_binary ))
