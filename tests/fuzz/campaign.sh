#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A long fuzzing campaign (reports/fuzzing.md records one): every libFuzzer target of the fuzz build for SECONDS
# each, JOBS targets at a time, at the lowest CPU priority, each on a scratch copy of its committed seed corpus.
# Prints one line per target: edges (cov), features (ft), executions, CPU seconds, crashes; crash inputs are kept
# in OUT/artifacts/. The bounded runs of the test command (tests/CMakeLists.txt, *_fuzz_bounded) are separate.
#   tests/fuzz/campaign.sh [SECONDS=1800] [JOBS=4] [OUT=/tmp/mmtwin-fuzz-campaign] [TARGET...]
#   MMTWIN_FUZZ_KEEP_CORPUS=1  continue from OUT/corpus_TARGET of an earlier campaign instead of starting afresh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-1800}
jobs=${2:-4}
out=${3:-/tmp/mmtwin-fuzz-campaign}
shift $(( $# < 3 ? $# : 3 ))
build=${MMTWIN_BUILD_DIR:-$root/build}-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$root"/tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi
mkdir -p "$out/artifacts"
run_one() {
  local t=$1 max_len=4096
  [ "$t" = results_db_fuzz ] && max_len=32768  # SQLite files: a page is 4 KiB
  [ "${MMTWIN_FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$out/corpus_$t"
  mkdir -p "$out/corpus_$t"
  [ -f "$out/$t.log" ] && mv "$out/$t.log" "$out/$t.log.$(date +%s)"
  /usr/bin/time -f "%U %S" -o "$out/$t.time" nice -n 19 "$build/tests/$t" -max_total_time="$seconds" \
    -max_len=$max_len -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
    "$out/corpus_$t" "$root/tests/fuzz/corpus/$t" > "$out/$t.log" 2>&1 || true
  local last execs cpu crashes
  last=$(grep -E "^#[0-9]+" "$out/$t.log" | tail -1)
  execs=$(grep -E "stat::number_of_executed_units" "$out/$t.log" | awk '{print $2}')
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$out/$t.time" 2>/dev/null || echo "?")
  crashes=$(ls "$out/artifacts" 2>/dev/null | grep -c "^$t-" || true)
  echo "$t: $(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+'), executions ${execs:-?}, CPU ${cpu} s, crash/timeout/oom inputs ${crashes}"
}
export -f run_one
export out seconds build root
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
