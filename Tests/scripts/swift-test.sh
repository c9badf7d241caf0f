#!/usr/bin/env bash
# Runs `swift test` with the given arguments, its output as usual. When it
# fails, it ends with what a log's last lines must show: the crash or failure
# messages and, after a crash, the crashed thread's frames and the tests that
# had started but not finished. A crash takes the whole test process down,
# and its backtrace (every thread, every image) pushes the message itself
# far up the log.
#
#   Tests/scripts/swift-test.sh [--leave-out REGEX] [swift test arguments, e.g. --skip-build --filter X]
#
# --leave-out REGEX (this script's, not swift test's) leaves those tests out
# of every process a run starts: a whole-suite run without them still runs
# the client's and the heavy suites apart (see below), as a --skip would not.
# Takes as long as the tests: ≈ 3 min for the whole suite on 2 cores.
# SWIFT names the swift command (default: swift).
set -uo pipefail

arguments=() leave_out=()
while (( $# )); do
  case $1 in
    --leave-out) leave_out=(--skip "$2"); shift 2 ;;
    --leave-out=*) leave_out=(--skip "${1#*=}"); shift ;;
    *) arguments+=("$1"); shift ;;
  esac
done
set -- "${arguments[@]}"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# A whole-suite run (no --filter, no --skip) runs the client's tests in a
# process of their own, before the rest. The client does its work on Swift's
# cooperative threads (one per core), and the live tests' blocking waits
# hold those threads for seconds at a time: in one process on two cores, a
# client test's deadline would measure the other tests, not the client.
client_tests=TopChromeClientTests
# Suites that load the machine on purpose (thousands of connections, slow
# clients, kill -9 drills) run in a process of their own too, after the
# client's: beside them, every other live test's deadline would measure
# their floods.
heavy_tests='DescriptorBudgetLiveTests|KillNineDrillTests|SlowClientsLiveTests'
# The rest waits far more than it computes (its live tests wait on servers,
# Redis and deadlines: alone it keeps two cores under half busy), so it runs
# as two processes at once, each taking every other suite. They run the test
# bundle itself, as `swift test` does: two `swift test`s on one build folder
# would take turns at its lock.
shards=2
whole=1
for argument in "$@"; do
  case $argument in --filter | --filter=* | --skip | --skip=*) whole=0 ;; esac
done

# Under a sanitizer the code runs several times slower: the tests' waits
# for what must happen wait three times as long (TopChromeTesting's testTimeScale).
for argument in "$@"; do
  case $argument in --sanitize | --sanitize=*) export TOPCHROME_TEST_TIME_SCALE=${TOPCHROME_TEST_TIME_SCALE:-3} ;; esac
done

# run_rest_in_shards [swift test arguments]: every test but the client's and
# the heavy ones (and those left out), in `shards` processes at once; each
# one's output follows the other's when both are done, and `log` is left
# holding a failed one's. Returns the first failed status, or 0.
run_rest_in_shards() {
  local build_arguments=() argument bundle parts shard pids=() first_failure=0
  for argument in "$@"; do
    [[ $argument == --skip-build ]] || build_arguments+=("$argument")
  done
  bundle=$(ls -d "$(${SWIFT:-swift} build --show-bin-path "${build_arguments[@]}")"/*PackageTests.xctest) || return 1
  local skip="$client_tests|$heavy_tests${leave_out[1]:+|${leave_out[1]}}"
  # Each shard's filter names its part whole: a suite as `^Module\.Suite/`,
  # a test outside any suite as `^Module\.name\(\)` (its id goes on with its place).
  parts=$("$bundle" --list-tests --testing-library swift-testing | awk '{
    slash = index($0, "/"); part = slash ? substr($0, 1, slash - 1) : $0
    gsub(/[.()]/, "\\\\&", part); print "^" part (slash ? "/" : "") }' | sort -u) || return 1
  for (( shard = 0; shard < shards; shard++ )); do
    local filter
    filter=$(awk -v n="$shards" -v k="$shard" 'NR % n == k' <<<"$parts" | paste -sd'|')
    "$bundle" --testing-library swift-testing --filter "$filter" --skip "$skip" >"$log.$shard" 2>&1 &
    pids+=($!)
  done
  for (( shard = 0; shard < shards; shard++ )); do
    wait "${pids[$shard]}"
    local shard_status=$?
    cat "$log.$shard"
    if (( shard_status != 0 && first_failure == 0 )); then
      first_failure=$shard_status
      cp "$log.$shard" "$log"
    fi
    rm -f "$log.$shard"
  done
  return "$first_failure"
}

# Unquoted: SWIFT may be a command with arguments ("xcrun swift").
if (( whole )); then
  ${SWIFT:-swift} test "$@" "${leave_out[@]}" --filter "$client_tests" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if (( status == 0 )); then
    ${SWIFT:-swift} test "$@" "${leave_out[@]}" --filter "$heavy_tests" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
  fi
  if (( status == 0 )); then
    run_rest_in_shards "$@"
    status=$?
  fi
else
  ${SWIFT:-swift} test "$@" "${leave_out[@]}" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
fi
(( status == 0 )) && exit 0

echo
echo "==== swift test $* failed (exit $status) ===="
echo "-- messages:"
# Swift's traps, glibc's own aborts (heap checks, fortify, stack protector),
# the sanitizers, and the failed expectations.
grep -aE 'Fatal error|Program crashed|exited with unexpected signal|^\*\*\* |^(free|malloc|realloc)\(\)|^double free|^munmap_chunk|^corrupted size|SUMMARY: .*Sanitizer|WARNING: ThreadSanitizer|✘ Test .* (failed|recorded)' "$log" \
  | tail -n 40
if grep -aqE 'Program crashed|exited with unexpected signal' "$log"; then
  echo "-- the crashed thread:"
  awk '/^Thread [0-9]+.* crashed:$/ { show = 1; lines = 0 }
       show { print; if (++lines >= 30 || ($0 == "" && lines > 2)) show = 0 }' "$log"
  echo "-- tests started and not finished:"
  # swift-testing: "◇ Test NAME started." / "✔ Test NAME [with N test cases] passed…" /
  # "✘ Test NAME … failed…"; XCTest: "Test Case 'NAME' started" / "… passed (" / "… failed (".
  awk '
    /^◇ Test .* started\.$/ && !/^◇ Test (run|case) / {
      name = substr($0, index($0, "Test ") + 5); sub(/ started\.$/, "", name); open[name] = 1 }
    /^(✔|✘) Test / && !/^(✔|✘) Test run / {
      name = substr($0, index($0, "Test ") + 5); sub(/ (with [0-9]+ test cases? )?(passed|failed) .*$/, "", name); delete open[name] }
    /^Test Case .* started/      { name = $0; sub(/^Test Case /, "", name); sub(/ started.*$/, "", name); open[name] = 1 }
    /^Test Case .* (passed|failed) \(/ { name = $0; sub(/^Test Case /, "", name); sub(/ (passed|failed) \(.*$/, "", name); delete open[name] }
    END { for (name in open) print "  " name }' "$log" | sort | head -n 60
fi
exit "$status"
