#!/usr/bin/env bash
# Runs `swift test` with the given arguments, its output as usual. When it
# fails, it ends with what a log's last lines must show: the crash or failure
# messages, the crashed thread's frames, and the tests that had started but
# not finished. A crash takes the whole test process down, and its backtrace
# (every thread, every image) pushes the message itself far up the log.
#
#   scripts/swift-test.sh [swift test arguments, e.g. --skip-build --filter X]
#
# SWIFT names the swift command (default: swift).
set -uo pipefail

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Unquoted: SWIFT may be a command with arguments ("xcrun swift").
${SWIFT:-swift} test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
(( status == 0 )) && exit 0

echo
echo "==== swift test $* failed (exit $status) ===="
echo "-- messages:"
grep -aE 'Fatal error|Program crashed|^\*\*\* |[Ff]atal|terminated|corrupt|double free|Assertion|Sanitizer|✘ Test .* (failed|recorded)|error: ' "$log" \
  | grep -av '^\s*$' | tail -n 40
echo "-- the crashed thread, if one did:"
awk '/^Thread [0-9]+.* crashed:$/ { show = 1; lines = 0 }
     show { print; if (++lines >= 30 || ($0 == "" && lines > 2)) show = 0 }' "$log"
echo "-- tests started and not finished:"
# swift-testing: "◇ Test NAME started." / "✔ Test NAME passed…" / "✘ Test NAME failed…";
# XCTest: "Test Case 'NAME' started" / "… passed (" / "… failed (".
awk '
  /^◇ Test .* started\.$/ && !/^◇ Test run started/ { name = substr($0, index($0, "Test ") + 5); sub(/ started\.$/, "", name); open[name] = 1 }
  /^(✔|✘) Test /                { name = substr($0, index($0, "Test ") + 5); sub(/ (passed|failed) .*$/, "", name); delete open[name] }
  /^Test Case .* started/      { name = $0; sub(/^Test Case /, "", name); sub(/ started.*$/, "", name); open[name] = 1 }
  /^Test Case .* (passed|failed) \(/ { name = $0; sub(/^Test Case /, "", name); sub(/ (passed|failed) \(.*$/, "", name); delete open[name] }
  END { for (name in open) print "  " name }' "$log" | sort | head -n 60
exit "$status"
