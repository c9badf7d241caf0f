# Sourced by the scripts that run the server.
#
# Checks nothing and takes no time itself: what the scripts that run the server share.

# Benchmarks and checks create sessions from one address far faster than any
# app: no creation limit for the servers they start (a variable, which any
# other server ignores).
export TOPCHROME_CREATE_RATE=0
#
# start_topchrome BINARY LOG [FLAGS...] starts the server on a free port of
# 127.0.0.1 (--port 0) and waits for its start line; sets server_pid and
# base_url (http://127.0.0.1:PORT). Returns 1, with the log on stderr, if the
# server exits or has not said where it listens within 10 s.
start_topchrome() {
  local binary=$1 log=$2
  shift 2
  "$binary" --port 0 "$@" >"$log" 2>&1 &
  server_pid=$!
  base_url=""
  for _ in $(seq 1000); do
    # The start line may carry a log prefix (timestamp, level): match it anywhere.
    base_url=$(sed -nE 's|.*topchrome listening on (http://[^ ]+).*|\1|p' "$log" | head -n 1)
    [ -n "$base_url" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.01
  done
  echo "the server did not start:" >&2
  cat "$log" >&2
  return 1
}

# free_port: a port of 127.0.0.1 the kernel just handed out, for what has no --port 0 (Redis, valgrind's
# server); taken by someone else meanwhile, rarely.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# create_sessions BASE N FILE [BEHAVIOR]: creates N sessions over one keep-alive
# connection and writes their ids to FILE, one a line (the wrk scripts' IDS_FILE).
# With BEHAVIOR (revealAtTop, pinned, enterAlways, exitUntilCollapsed) the
# sessions are created with it and an inset of 100; without, with no body.
create_sessions() {
  python3 - "$@" <<'PY'
import http.client, json, os, sys, urllib.parse
base, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
behavior = sys.argv[4] if len(sys.argv) > 4 else ""
body = json.dumps({"inset": 100, "behavior": behavior}) if behavior else None
headers = {"Content-Type": "application/json"} if behavior else {}
if os.environ.get("BENCH_AUTH"):  # a server with --auth-token-file
    headers["Authorization"] = "Bearer " + os.environ["BENCH_AUTH"]
url = urllib.parse.urlsplit(base)
connection = http.client.HTTPConnection(url.hostname, url.port)
with open(path, "w") as out:
    for _ in range(count):
        connection.request("POST", "/v1/sessions", body=body, headers=headers)
        response = connection.getresponse()
        assert response.status == 201, response.status
        out.write(json.loads(response.read())["id"] + "\n")
PY
}

# wait_answering BASE PID LOG: waits until the server at BASE answers /readyz
# (200: ready, a Redis store connected; 404: a server without it, such as the
# C yardstick). Returns 1, with LOG on stderr, if PID exits first or a
# minute passes (valgrind takes seconds to start a server).
wait_answering() {
  local _
  for _ in $(seq 600); do
    case $(curl -s -o /dev/null -w '%{http_code}' "$1/readyz") in 200 | 404) return 0 ;; esac
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "the server at $1 did not answer:" >&2
  cat "$3" >&2
  return 1
}

# stop_started: stops every process in the array `pids` (a script adds each
# one it starts) and removes the folder `$work`; scripts trap it on EXIT.
stop_started() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}

# proc_ticks PID...: CPU the processes used so far, in clock ticks (user + system).
proc_ticks() { local sum=0 pid; for pid in "$@"; do sum=$(( sum + $(awk '{print $14 + $15}' "/proc/$pid/stat") )); done; echo "$sum"; }
# machine_ticks: the whole machine's busy and idle ticks so far.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat; }

# load_library PORT: loads the Redis function library (its two files, one
# after the other) into that Redis under its source name, and prints the name
# (the service loads the same text under a digest name).
load_library() {
  cat Sources/RedisSessionStore/topchrome.lua Sources/RedisSessionStore/topchrome-rules.lua |
    redis-cli -p "$1" -x FUNCTION LOAD REPLACE
}
