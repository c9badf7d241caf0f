#!/usr/bin/env bash
# Checks the live server against openapi.yaml with Schemathesis: every
# operation, every check (status codes, content types, response schemas and
# headers, positive and negative data, unsupported methods, stateful links).
# Fails on any failure or error, on an operation left untested, or on fewer
# than MIN_REQUESTS generated requests.
#
# Then the same with a bearer token (--auth-token-file) and minting on
# (--token-signing-key, a key made for the run): with the token it must pass
# as well, and without it every /v1 answer must be 401 with a
# WWW-Authenticate challenge. The first run mints nothing, so both runs
# check the minting paths: 404 without a key, tokens with one.
#
# Usage: Tests/scripts/check-conformance.sh [path/to/topchrome]
#   SEED=n          another seed than the one in Tests/scripts/schemathesis.toml
#   MIN_REQUESTS=n  least number of generated requests (default 1000)
# Needs the test tools (scripts/install-deps.sh --test); reports and
# Schemathesis' own files go to .build/conformance.
#
# Takes ≈ 1 min.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
binary="${1:-$root/.build/release/topchrome}"
case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
python="$root/.build/python/bin/python"
min_requests="${MIN_REQUESTS:-1000}"
work="$root/.build/conformance"
source "$root/scripts/server.sh"

[ -x "$binary" ] || { echo "no server binary at $binary (swift build -c release --product topchrome)" >&2; exit 2; }
"$python" -c 'import schemathesis' 2>/dev/null || "$root/scripts/install-deps.sh" --test
rm -rf "$work"
mkdir -p "$work"
cd "$work"  # Schemathesis and Hypothesis keep their files in the working directory

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

# Starts the server on a free port with quick long-polls and heartbeats (so
# a run takes seconds, not minutes); sets server_pid and base_url.
start_server() {
  local log="$work/server-$1.log"
  shift
  start_topchrome "$binary" "$log" --log-level warn --max-wait 1 --heartbeat 1 "$@" || exit 1
}

# Runs Schemathesis against $base_url; $1 names the run (its report folder).
schemathesis() {
  local name="$1"
  shift
  local seed=()
  [ -z "${SEED:-}" ] || seed=(--seed "$SEED")
  "$root/.build/python/bin/schemathesis" --config-file "$root/Tests/scripts/schemathesis.toml" \
    run "$root/openapi.yaml" --url "$base_url" --checks all "${seed[@]}" --no-color \
    --report json,har --report-dir "$work/$name" "$@"
}

# Reads a run's JSON report: prints its counts; fails on failures, errors,
# untested operations, or fewer than $2 generated requests.
verify_report() {
  "$python" - "$work/$1" "$2" <<'EOF'
import glob, json, sys
folder, least = sys.argv[1], int(sys.argv[2])
report = json.load(open(glob.glob(f"{folder}/json-*.json")[0]))
cases, operations = report["test_cases"], report["operations"]
print(f"conformance [{folder.rsplit('/', 1)[-1]}]: seed {report['seed']}, "
      f"{operations['tested']}/{operations['total']} operations, {cases['generated']} requests generated, "
      f"{cases['unique_failures']} failures, {len(report['errors'])} errors, {report['running_time']:.1f} s")
problems = []
if report["exit_code"] != 0 or not report["complete"]:
    problems.append(f"Schemathesis ended with {report['exit_code']} ({report['stop_reason']})")
if report["failures"] or cases["with_failures"]:
    problems.append(f"{cases['unique_failures']} failures")
if report["errors"] or cases["errored"] or operations["errored"]:
    problems.append(f"{len(report['errors'])} errors")
if operations["tested"] != operations["total"]:
    problems.append(f"only {operations['tested']} of {operations['total']} operations tested")
if cases["generated"] < least:
    problems.append(f"only {cases['generated']} requests generated, at least {least} wanted")
for problem in problems:
    print(f"conformance: FAILED: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
}

status=0

echo "== openapi.yaml against the server as configured by default"
start_server open
schemathesis open || true  # the report says what went wrong
verify_report open "$min_requests" || status=1
stop_server

echo "== with --auth-token-file and --token-signing-key: with the token, then without"
token="conformance-$RANDOM$RANDOM$RANDOM"
printf '%s\n' "$token" >"$work/token"
(umask 077; openssl genpkey -algorithm ed25519 -out "$work/signing.pem")
start_server auth --auth-token-file "$work/token" --token-signing-key "$work/signing.pem"
schemathesis auth-token --max-examples 25 --header "Authorization: Bearer $token" || true
verify_report auth-token 100 || status=1
schemathesis auth-none --max-examples 10 || true
verify_report auth-none 100 || status=1
# Schemathesis accepts any documented answer; here only 401 is right.
"$python" - "$work/auth-none" <<'EOF' || status=1
import glob, json, re, sys
entries = json.load(open(glob.glob(f"{sys.argv[1]}/har-*.json")[0]))["log"]["entries"]
wrong = []
for entry in entries:
    url, response = entry["request"]["url"], entry["response"]
    if not re.match(r"^https?://[^/]+/v1(/|$)", url):
        continue
    headers = {header["name"].lower() for header in response["headers"]}
    if response["status"] != 401 or "www-authenticate" not in headers:
        wrong.append(f"{entry['request']['method']} {url} -> {response['status']}")
print(f"conformance [auth-none]: {len(entries)} requests, {len(wrong)} /v1 answers other than 401 with WWW-Authenticate")
for line in wrong[:20]:
    print(f"conformance: FAILED: without a token: {line}", file=sys.stderr)
sys.exit(1 if wrong else 0)
EOF
stop_server

[ "$status" -eq 0 ] && echo "conformance: OK" || echo "conformance: FAILED" >&2
exit "$status"
