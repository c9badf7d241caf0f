#!/usr/bin/env bash
# `make test`'s driver: runs each stage (a make target) in order, stops at
# the first that fails, and ends, passed or failed, with every stage's
# duration, so a CI log shows where the time went.
#
#   Tests/scripts/run-stages.sh STAGE...      (make targets, in order)
#
# Takes as long as its stages (all of `make test`: ≈ 19 min on 2 cores
# from a fresh clone; ≈ 13 min again in the same clone, its builds done,
# with another process keeping a core busy).
# MAKE names the make command (default: make).
set -uo pipefail

names=() durations=() outcomes=()
started=$EPOCHREALTIME

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }'; }
minutes() { awk -v s="$1" 'BEGIN { printf "%d:%02d", s / 60, s % 60 }'; }

report() {
  local i
  echo
  echo "==== stages (min:s)"
  for i in "${!names[@]}"; do
    printf '%8s  %-22s %s\n' "$(minutes "${durations[$i]}")" "${names[$i]}" "${outcomes[$i]}"
  done
  printf '%8s  %s\n' "$(minutes "$(elapsed "$started")")" "in all"
}
trap report EXIT

for stage in "$@"; do
  echo
  echo "==== stage $stage"
  stage_started=$EPOCHREALTIME
  status=0
  ${MAKE:-make} --no-print-directory "$stage" || status=$?
  names+=("$stage")
  durations+=("$(elapsed "$stage_started")")
  if (( status != 0 )); then
    outcomes+=("FAILED (exit $status)")
    exit "$status"
  fi
  outcomes+=("ok")
done
