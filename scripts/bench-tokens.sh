#!/usr/bin/env bash
# What an access token costs a scroll report (issue 36): instructions per
# request under callgrind, which repeat on a busy machine where CPU time does
# not, for the same server (--auth-token-file and --token-keys) driven
# with the global token and with an access token per session (HS256 or
# EdDSA, made by PyJWT; each verified once, then remembered).
#
# Usage: scripts/bench-tokens.sh   (COUNTED, WARMUP as bench-instructions.sh)
# SESSIONS defaults to 8, one per connection: each client reports with its
# one token, as an app at 60 Hz does, so after the warm-up every token is a
# remembered one. With SESSIONS=1000 and a slow count most tokens are
# verified during the count: that measures the signature checks instead.
#
# Then the issue's own figure: the server's CPU per request (user + system,
# from /proc, as `make bench` reads it) under wrk, the three credentials
# against one server in rounds that rotate which goes first (ROUNDS, default
# 6; WRK_DURATION, default 5s), with the medians and their ratios. CPU time
# holds the kernel's share of a request, which the token does not change.
# SKIP_INSTRUCTIONS=1 runs only this part. Takes 3–5 minutes in all.
set -euo pipefail
cd "$(dirname "$0")/.."
export SESSIONS=${SESSIONS:-8} COUNTED=${COUNTED:-10s}
scripts/install-deps.sh --test >/dev/null
swift build -c release --product topchrome >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=.build/python/bin/python
global=bench-global-token-0123456789abcdef
echo "$global" > "$work/token"
# An Ed25519 key and an HMAC secret, their JWKS, and a minter per algorithm.
"$python" - "$work" <<'PY'
import json, os, sys, jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
work = sys.argv[1]
key, secret = ed25519.Ed25519PrivateKey.generate(), os.urandom(32)
algorithms = jwt.algorithms.get_default_algorithms()
ed = json.loads(algorithms["EdDSA"].to_jwk(key.public_key())); ed["kid"] = "ed"
oct_ = json.loads(algorithms["HS256"].to_jwk(secret)); oct_["kid"] = "oct"
json.dump({"keys": [ed, oct_]}, open(f"{work}/jwks.json", "w"))
open(f"{work}/ed.pem", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))
open(f"{work}/secret", "wb").write(secret)
PY
for alg in EdDSA HS256; do
  cat > "$work/mint-$alg" <<SH
#!/bin/sh
exec "$PWD/$python" - "\$1" "\$2" <<'PY'
import sys, time, jwt
ids, out = sys.argv[1], sys.argv[2]
key = open("$work/ed.pem").read() if "$alg" == "EdDSA" else open("$work/secret", "rb").read()
kid = "ed" if "$alg" == "EdDSA" else "oct"
now = int(time.time())
with open(out, "w") as f:
    for line in open(ids):
        f.write(jwt.encode({"sid": line.strip(), "scope": "write", "iat": now, "exp": now + 3600}, key,
                           algorithm="$alg", headers={"kid": kid}) + "\n")
PY
SH
  chmod +x "$work/mint-$alg"
done
server=("$PWD/.build/release/topchrome" --port '{port}' --threads 1 --auth-token-file "$work/token" --token-keys "$work/jwks.json")
if [ -z "${SKIP_INSTRUCTIONS:-}" ]; then
  echo "## global token"
  BENCH_AUTH=$global WORKLOADS=scroll scripts/bench-instructions.sh "${server[@]}"
  for alg in EdDSA HS256; do
    echo "## an access token per session, $alg"
    BENCH_AUTH=$global MINT="$work/mint-$alg" WORKLOADS=scroll scripts/bench-instructions.sh "${server[@]}"
  done
fi

# CPU per request: one server, its sessions and every token made once.
source scripts/server.sh
pids=()
trap 'stop_started' EXIT
rounds=${ROUNDS:-6} duration=${WRK_DURATION:-5s}
start_topchrome .build/release/topchrome "$work/server.log" --threads 1 --log-level warn \
  --auth-token-file "$work/token" --token-keys "$work/jwks.json"
pids+=("$server_pid")
BENCH_AUTH=$global create_sessions "$base_url" "$SESSIONS" "$work/ids"
for alg in EdDSA HS256; do "$work/mint-$alg" "$work/ids" "$work/tokens-$alg"; done
export BENCH_LUA_DIR="$PWD/Benchmarks/wrk" IDS_FILE="$work/ids" BENCH_AUTH=$global
echo "## CPU per request, wrk -t1 -c$SESSIONS -d$duration scroll, $rounds rounds rotating the order ($(date -u +%Y-%m-%dT%H:%MZ))"
: > "$work/cpu"
credentials=(global EdDSA HS256)
for round in $(seq "$rounds"); do
  for step in 0 1 2; do
    credential=${credentials[$(( (round + step) % 3 ))]}
    if [ "$credential" = global ]; then unset TOKENS_FILE; else export TOKENS_FILE="$work/tokens-$credential"; fi
    wrk -t1 -c"$SESSIONS" -d1s -s "$BENCH_LUA_DIR/scroll.lua" "$base_url" >/dev/null  # every token remembered
    before=$(proc_ticks "$server_pid")
    wrk -t1 -c"$SESSIONS" -d"$duration" -s "$BENCH_LUA_DIR/scroll.lua" "$base_url" > "$work/wrk.txt"
    # A refused token is a cheap 401: the figure would flatter it.
    if grep -q "Non-2xx" "$work/wrk.txt"; then echo "$credential: refused requests" >&2; cat "$work/wrk.txt" >&2; exit 1; fi
    requests=$(awk '/requests in/ { print $1 }' "$work/wrk.txt")
    echo "$credential $round $requests $(( $(proc_ticks "$server_pid") - before ))" >> "$work/cpu"
  done
done
python3 - "$work/cpu" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
hz, runs = int(sys.argv[2]), {}
for line in open(sys.argv[1]):
    credential, round_, requests, ticks = line.split()
    runs.setdefault(credential, {})[round_] = int(ticks) / hz * 1e6 / int(requests)
base = runs["global"]
print(f"{'credential':10} {'median µs/req':>14} {'against global (median of rounds)':>34}  runs")
for credential, figures in runs.items():
    ratios = [figures[r] / base[r] - 1 for r in figures]
    print(f"{credential:10} {statistics.median(figures.values()):14.2f} {statistics.median(ratios):+34.1%}   "
          + " ".join(f"{f:.2f}" for f in figures.values()))
PY
