#!/usr/bin/env bash
# Runs the whole test suite (`swift test`) under AddressSanitizer, with
# LeakSanitizer on, in its own build folder (.build/asan).
#
#   Tests/scripts/test-asan.sh [--leave-out REGEX] [extra swift test arguments, e.g. --filter StrictJSONTests]
#
# Fails if a test fails or if any process the tests run (the test runner, and
# the topchrome servers the live tests start) reports a memory error or a
# leak. Only leaks inside libXCTest, libcurl and FoundationNetworking are
# suppressed (Tests/scripts/lsan.supp), and one known overread inside Foundation's
# Process (Tests/scripts/asan.supp).
#
# Takes ≈ 5 min to build from clean and about as long as the TSan stage to
# run (≈ 4–5 min) on 2 busy cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

build=.build/asan
reports=$root/.build/asan-reports
rm -rf "$reports"
mkdir -p "$reports"

# Every sanitized process writes its reports to $reports/asan.PID, children too,
# so reports from servers the tests start cannot go unnoticed in a pipe.
export ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan:suppressions=$root/Tests/scripts/asan.supp${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/Tests/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# Swift's own crash backtracer reads memory in ways ASan flags; let ASan report instead.
export SWIFT_BACKTRACE=enable=no

# lld when the toolchain has it: gold prints a warning for every ASan symbol it cannot export.
linker=()
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
if [[ -x $toolchain/bin/ld.lld ]] || command -v ld.lld >/dev/null; then linker=(-Xswiftc -use-ld=lld); fi

started=$SECONDS
echo "test-asan: building the tests with -sanitize=address in $build"
# The test bundle and what it links or starts, not the tools no test runs.
swift build --product TopChromePackageTests --sanitize=address --build-path "$build" "${linker[@]}"
echo "test-asan: built in $(( SECONDS - started )) s; running swift test"
status=0
SWIFT=swift Tests/scripts/swift-test.sh --skip-build --sanitize=address --build-path "$build" "${linker[@]}" "$@" || status=$?

shopt -s nullglob
found=("$reports"/asan.*)
if (( ${#found[@]} )); then
    echo "test-asan: ${#found[@]} sanitizer report(s):" >&2
    for report in "${found[@]}"; do
        # The first lines and the first three roots (direct leaks) of each report;
        # the full report stays in the file.
        echo "---- $report ($(grep -m 1 -oE '^SUMMARY: .*' "$report" || echo 'no summary'))" >&2
        grep -m 1 -B 2 -A 25 -E '^==[0-9]+==ERROR' "$report" | grep -v -E '^(Indirect|Direct) leak' | head -n 4 >&2 || true
        # A leaked cycle has no direct root: then its first indirect stacks.
        kind=Direct; grep -q '^Direct leak' "$report" || kind=Indirect
        awk -v kind="$kind" '/^(Direct|Indirect) leak/ { show = 0 } $0 ~ "^" kind " leak" { n++; show = n <= 3 } show' "$report" | head -n 60 >&2
    done
    status=1
fi
echo "test-asan: $(( SECONDS - started )) s in all"
if (( status != 0 )); then
    echo "test-asan: FAILED" >&2
    exit "$status"
fi
echo "test-asan: all tests passed; no AddressSanitizer or LeakSanitizer report"
