#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the goldens of every shipped scenario: for each scenario file under scenarios/ (except sweeps/, tune/,
# validation suites *.suite.yaml, goldens/ themselves and files whose first line is "# no golden: REASON"), `mmtwin simulate` writes summary.json and stages.csv
# and `mmtwin plan --json` writes plan.json into scenarios/goldens/<path without .yaml>/.
# tests/scenario/golden_slow_test.cc compares fresh runs with these files byte for byte, so any change to a
# simulated figure shows up as a reviewable diff: run this, then `git diff scenarios/goldens`.
#   MMTWIN_BUILD_DIR   build folder (default: build)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
mmtwin_build mmtwin
cd "$MMTWIN_ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS= read -r f; do
  case "$(head -n 1 "$f")" in "# no golden:"*) continue ;; esac  # e.g. the 100k-GPU scale benchmark
  rel=${f#scenarios/}
  rel=${rel%.yaml}
  code=0
  "$MMTWIN_BUILD_DIR/sim/mmtwin" simulate "$f" -o "$tmp/$rel" --json >/dev/null 2>"$tmp/err" || code=$?
  if [ "$code" -gt 1 ]; then  # 1 = a stage does not fit: still a golden
    cat "$tmp/err" >&2
    exit "$code"
  fi
  mkdir -p "scenarios/goldens/$rel"
  cp "$tmp/$rel/summary.json" "$tmp/$rel/stages.csv" "scenarios/goldens/$rel/"
  code=0
  "$MMTWIN_BUILD_DIR/sim/mmtwin" plan "$f" --json >"scenarios/goldens/$rel/plan.json" 2>"$tmp/err" || code=$?
  if [ "$code" -gt 1 ]; then
    cat "$tmp/err" >&2
    exit "$code"
  fi
  echo "golden: scenarios/goldens/$rel/{summary.json,stages.csv,plan.json}"
done < <(find scenarios -name '*.yaml' -not -name '*.suite.yaml' -not -path 'scenarios/sweeps/*' -not -path 'scenarios/tune/*' -not -path 'scenarios/goldens/*' | sort)
