#!/usr/bin/env bash
# The WebSocket channel against HTTP (issue 38; BENCHMARKS.md "WebSocket
# against HTTP"), side by side in one run, release build, memory store:
#   1. the server's CPU (user + system, /proc/PID/stat) per report sent,
#      (a) one device at 120 Hz, (b) DEVICES devices at DEVICE_HZ each,
#      all open at once;
#   2. report on device A -> the state on device B, p50 and p99, A at 120 Hz;
#   3. the server's memory (VmRSS) per open idle socket and per open idle
#      event stream.
# Each transport is modelled on TopChromeClient: over HTTP the reports that
# waited go as one batch, one request in flight, requests at least 50 ms
# apart, and the device holds its event stream open beside them; over the
# socket one message (with an id, answered) in flight, no pacing, and the
# device follows on the same socket. The clients are asyncio in one Python
# process, which competes with the server for the 2 cores: the figures are
# the server's CPU per report, not throughput. Rounds alternate the two
# transports on one server (ABBA); memory is measured on a fresh server
# each round.
#
# Settings (environment): ROUNDS=3 ONE_SECONDS=30 DEVICES=1000 DEVICE_HZ=2
#   MANY_SECONDS=15 LATENCY_SECONDS=20 IDLE=1000
#
# Takes about 10 min with the defaults (plus the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test >/dev/null
swift build -c release --product topchrome >/dev/null
# Benchmarks create sessions from one address far faster than any app.
source scripts/server.sh
exec .build/python/bin/python Benchmarks/socket/bench_socket.py .build/release/topchrome
