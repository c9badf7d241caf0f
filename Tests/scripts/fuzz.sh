#!/usr/bin/env bash
# Fuzzes everything in TopChrome that reads untrusted bytes, with libFuzzer
# and AddressSanitizer (Sources/TopChromeFuzz, Fuzz/README.md).
#
#   Tests/scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 60 seconds each; json request body snapshot journal events resp cluster functions frames token)
#
# Each target first runs every input of its seed corpus (Fuzz/corpus/TARGET,
# never written to: it works on a copy), which is what catches a regression,
# then fuzzes until SECONDS have passed. The run fails on any crash,
# sanitizer or leak report, failed invariant or timeout, and if a target did
# not get through its corpus; the input is saved under .build/fuzz-artifacts/TARGET/.
# Prints the executions per target from libFuzzer's final statistics.
# Targets fuzz FUZZ_JOBS at a time (default: one per core), so it takes the
# build (≈ 1 min from clean on 2 cores) and then SECONDS × targets /
# FUZZ_JOBS: ≈ 5 min on 2 cores at the default 60 s (`make fuzz`), ≈ 1 min
# at `make test`'s 8 s.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2; }
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")
(( ${#targets[@]} )) || targets=(json request body snapshot journal events resp cluster functions frames token)

build=.build/fuzz
artifacts=.build/fuzz-artifacts
work=.build/fuzz-corpus
logs=.build/fuzz-logs

# libFuzzer's runtime comes with the Swift toolchain; "no_main" because
# TopChromeFuzz has its own main and calls LLVMFuzzerRunDriver. It is linked
# as a plain archive rather than with -sanitize=fuzzer, whose whole-archive
# runtime (with its main) would break the link of the EmbedFile build tool.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -n 1 || true)
if [[ -z $runtime ]]; then
    echo "fuzz: libFuzzer's runtime (libclang_rt.fuzzer_no_main) is not in the Swift toolchain at $toolchain" >&2
    exit 1
fi
# gold crashes on these objects; lld ships with the toolchain (else: apt-get install lld).
if [[ ! -x $toolchain/bin/ld.lld ]] && ! command -v ld.lld >/dev/null; then
    echo "fuzz: ld.lld not found; install it with 'apt-get install lld'" >&2
    exit 1
fi

echo "fuzz: building TopChromeFuzz (release, libFuzzer + AddressSanitizer) in $build"
started=$SECONDS
swift build -c release --build-path "$build" --product TopChromeFuzz \
    -Xswiftc -sanitize=address \
    -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
    -Xswiftc -DFUZZING -Xswiftc -use-ld=lld \
    -Xlinker "$runtime" -Xlinker -lstdc++
binary=$build/release/TopChromeFuzz
echo "fuzz: built in $(( SECONDS - started )) s"

# libFuzzer reports crashes itself: keep Swift's backtracer out of the way.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# fuzz_target TARGET: one target for $seconds s; its summary line goes to
# $logs/TARGET.summary, and its status is the run's.
fuzz_target() {
    local target=$1 flags log started status=0 runs rate added rss line
    case $target in
        json) flags=(-dict=Fuzz/json.dict -max_len=4096) ;;
        body) flags=(-dict=Fuzz/json.dict -max_len=16384) ;;
        # Long-poll timers outlive the input that started them, which makes
        # libFuzzer's leak check after every input slow and noisy; leaks are
        # still reported when the process exits.
        request) flags=(-dict=Fuzz/request.dict -max_len=8192 -detect_leaks=0) ;;
        snapshot) flags=(-dict=Fuzz/snapshot.dict -max_len=4096) ;;
        journal) flags=(-dict=Fuzz/snapshot.dict -max_len=4096) ;;
        events) flags=(-dict=Fuzz/events.dict -max_len=4096) ;;
        resp) flags=(-dict=Fuzz/resp.dict -max_len=4096) ;;
        cluster) flags=(-dict=Fuzz/cluster.dict -max_len=4096) ;;
        functions) flags=(-dict=Fuzz/functions.dict -max_len=4096) ;;
        frames) flags=(-max_len=4096) ;;
        token) flags=(-dict=Fuzz/token.dict -max_len=4096) ;;
    esac
    rm -rf "${work:?}/$target"
    mkdir -p "$work/$target" "$artifacts/$target"
    cp Fuzz/corpus/"$target"/* "$work/$target/"
    log=$logs/$target.log
    echo "fuzz: $target for $seconds s (log: $log)"
    started=$SECONDS
    "$binary" "$target" "$work/$target" "${flags[@]}" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$target/" >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    line=$(printf '%-8s %10s runs  %6s/s  %5s new inputs  %5s MB peak  %4s s' \
        "$target" "${runs:-?}" "${rate:-?}" "${added:-?}" "${rss:-?}" "$(( SECONDS - started ))")
    # libFuzzer prints INITED once every input of the corpus has run.
    if (( status != 0 )) || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|==TopChromeFuzz== invariant failed|deadly signal|Test unit written' "$log" \
        || ! grep -qE '^#[0-9]+[[:space:]]+INITED ' "$log"; then
        echo "$line  FAILED (exit $status)" >"$logs/$target.summary"
        {
            echo "fuzz: $target FAILED; the report:"
            grep -E -A40 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|==TopChromeFuzz== invariant failed' "$log" | head -n 80 || true
            grep -E 'Test unit written' "$log" || true
            grep -qE '^#[0-9]+[[:space:]]+INITED ' "$log" || echo "fuzz: $target did not get through its corpus (no INITED line in $log)"
            echo "fuzz: replay with: $binary $target FILE"
        } >&2
        return 1
    fi
    echo "$line  ok" >"$logs/$target.summary"
}

for target in "${targets[@]}"; do
    case $target in
        json | request | body | snapshot | journal | events | resp | cluster | functions | frames | token) ;;
        *) echo "fuzz: unknown target '$target' (json, request, body, snapshot, journal, events, resp, cluster, functions, frames, token)" >&2; exit 2 ;;
    esac
    [[ -d Fuzz/corpus/$target ]] || { echo "fuzz: no seed corpus Fuzz/corpus/$target" >&2; exit 1; }
done
mkdir -p "$logs"
rm -f "$logs"/*.summary

# Each libFuzzer process is one thread: FUZZ_JOBS targets (default: one a
# core) fuzz side by side, each still for its whole $seconds.
jobs=${FUZZ_JOBS:-$(nproc)}
failed=()
declare -A running=()
finish_one() {
    local pid status=0 target
    wait -n -p pid "${!running[@]}" || status=$?
    target=${running[$pid]}
    unset "running[$pid]"
    (( status == 0 )) || failed+=("$target")
}
for target in "${targets[@]}"; do
    (( ${#running[@]} < jobs )) || finish_one
    fuzz_target "$target" &
    running[$!]=$target
done
while (( ${#running[@]} )); do finish_one; done

echo
echo "target        executions      rate     corpus growth    memory     time"
for target in "${targets[@]}"; do cat "$logs/$target.summary" 2>/dev/null || echo "$target  no summary (see $logs/$target.log)"; done
if (( ${#failed[@]} )); then
    echo "fuzz: FAILED: ${failed[*]} (inputs in $artifacts, logs in $logs)" >&2
    exit 1
fi
echo "fuzz: no crash, no sanitizer report, no leak, every invariant held"
