#!/usr/bin/env bash
# Builds the server binary as the container image ships it (release, static
# Swift stdlib, stripped) and fails if it links Foundation or ICU again, or
# is larger than MAX_BINARY_BYTES (default 25,000,000) once stripped.
#
# The server speaks JSON and HTTP: FoundationEssentials is all it may use.
# Full Foundation (or FoundationInternationalization) brings ICU, whose data
# alone is about 34 MB of a static binary. Executables meant to use Foundation
# (a client, a tool) are separate products and are not checked here.
#
# Usage: Tests/scripts/check-binary.sh [PRODUCT...]   (default: topchrome)
# Builds in .build/static, so it never makes `make release` rebuild; prints
# the sizes; leaves the stripped binary at .build/static/PRODUCT.stripped.
#
# Takes a release build (≈ 2–3 min on 2 busy cores) the first time, seconds after.
set -euo pipefail
cd "$(dirname "$0")/../.."
max_bytes="${MAX_BINARY_BYTES:-25000000}"
build=(swift build -c release --static-swift-stdlib --build-path .build/static)
[ $# -gt 0 ] || set -- topchrome

scripts/install-deps.sh
failed=0
fail() { echo "check-binary: FAIL: $*" >&2; failed=1; }

for product in "$@"; do
  "${build[@]}" --product "$product" >/dev/null
  binary="$("${build[@]}" --product "$product" --show-bin-path)/$product"
  stripped=".build/static/$product.stripped"
  strip -o "$stripped" "$binary"

  # Markers that survive any Foundation or ICU version: Swift symbols of the
  # Foundation and FoundationInternationalization modules (mangled as
  # `$s<length><name>`), ICU's data blob (`icudt<version>_dat`), and the
  # names of the packages inside that blob (`icudt<version>l-…`), which stay
  # in the stripped binary with the data itself.
  symbols=$(nm "$binary" | awk '{print $NF}')
  count() { grep -cE "$1" <<<"$symbols" || true; }
  foundation=$(count '^\$s10Foundation')
  international=$(count '^\$s30FoundationInternationalization')
  icu_data=$(count '^icudt[0-9]+_dat$')
  icu_packages=$(strings -n 8 "$stripped" | grep -cE 'icudt[0-9]+[lb]' || true)
  needed=$(readelf -d "$binary" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | tr '\n' ' ')
  [ "$foundation" -eq 0 ] || fail "$product links the Foundation module ($foundation symbols); import FoundationEssentials instead"
  [ "$international" -eq 0 ] || fail "$product links FoundationInternationalization ($international symbols), and with it ICU"
  [ "$icu_data" -eq 0 ] && [ "$icu_packages" -eq 0 ] \
    || fail "$product carries ICU's data (symbol: $icu_data, package names: $icu_packages)"
  grep -qiE 'foundation|icu' <<<"$needed" && fail "$product loads Foundation or ICU as a shared library ($needed)"

  bytes=$(stat -c %s "$stripped")
  full_bytes=$(stat -c %s "$binary")
  [ "$bytes" -le "$max_bytes" ] || fail "$product is $bytes bytes stripped, over the $max_bytes limit"
  awk -v p="$product" -v s="$bytes" -v f="$full_bytes" -v m="$max_bytes" 'BEGIN {
    printf "check-binary: %s %.1f MB stripped (%d bytes; %.1f MB with symbols), limit %.1f MB\n", p, s/1e6, s, f/1e6, m/1e6 }'
  echo "check-binary: $product shared libraries: $needed"
done

[ "$failed" -eq 0 ] && echo "check-binary: no Foundation, no ICU, within size"
exit "$failed"
