#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main command: installs dependencies when missing (apt-get), builds, then simulates the bundled
# default scenario (scenarios/default.yaml: the OmniBal recipe for InternVL-1.5 6B+20B on 16 A100s, seconds) and
# prints its summary. Outputs land in runs/default/ (summary.json, stages.csv, trace.json for Perfetto, the resolved
# scenario). Extra arguments go to `mmtwin simulate`, e.g. --json or --engine simgrid.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
mmtwin_build mmtwin
cd "$MMTWIN_ROOT"
"$MMTWIN_BUILD_DIR/sim/mmtwin" simulate scenarios/default.yaml -o runs/default "$@"
