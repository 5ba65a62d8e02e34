#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the GUI screenshots in this folder (shown by README.md and gui/README.md) from a build with the GUI,
# offscreen:   bash reports/gui/make_screenshots.sh [BUILD_DIR]     (default: build)
# editor, yaml, summary, timeline, compare: scenarios/default.yaml (A) against the same with a uniform partition
# (B), also the two runs of history; sweep: the heatmap of reports/gui/sweep.yaml; memory: default.yaml with GPipe, no recompute and 4
# micro-batches, whose stage 2 does not fit (75.0 GiB usable); yaml-error: default.yaml with dp 0, as the editor
# shows the core's message; tune: the Tune tab on `mmtwin tune scenarios/tune/default-16gpu.yaml`'s output folder;
# replay: the Replay tab on the kept random-batch run reports/whatif/runs/random-b8 (replay.png and tune.png of the
# first call show empty tabs and are not kept).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen MMTWIN_GUI_RUNS=$tmp/runs
cd "$root"
"$build/sim/mmtwin" sweep reports/gui/sweep.yaml --db "$tmp/gui-sweep.sqlite" --jobs 2 >/dev/null
"$build/gui/mmtwin-gui" --screenshot reports/gui --what-if policies.partition=uniform scenarios/default.yaml \
  "$tmp/gui-sweep.sqlite"
"$build/gui/mmtwin-gui" --screenshot "$tmp/oom" --what-if policies.schedule=gpipe --what-if policies.recompute=none \
  --what-if parallel.micro_batches=4 scenarios/default.yaml
cp "$tmp/oom/memory.png" reports/gui/memory.png
sed 's/dp: 2,/dp: 0,/' scenarios/default.yaml >"$tmp/default.yaml"
(cd "$tmp" && "$build/gui/mmtwin-gui" --screenshot "$tmp/error" default.yaml)
cp "$tmp/error/yaml.png" reports/gui/yaml-error.png
rm -f reports/gui/replay.png reports/gui/tune.png
"$build/sim/mmtwin" tune scenarios/tune/default-16gpu.yaml -o "$tmp/tune" --jobs 2 >/dev/null
"$build/gui/mmtwin-gui" --screenshot "$tmp/tune-shots" "$tmp/tune"
cp "$tmp/tune-shots/tune.png" reports/gui/tune.png
"$build/gui/mmtwin-gui" --screenshot "$tmp/replay-shots" --replay reports/whatif/runs/random-b8
cp "$tmp/replay-shots/replay.png" reports/gui/replay.png
