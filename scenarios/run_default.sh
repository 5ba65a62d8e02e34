#!/usr/bin/env bash
# The README's main command: installs dependencies when missing, builds, then runs the bundled default:
# generate the InternVL-1.2M trace (1,267,819 samples, seed 1) and compare OmniBal Table 3's data-balance methods
# and OrchMLLM post-balancing for InternVL-1.5 6B+20B on 16 data-parallel ranks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
mmtwin_build mmtwin
MMTWIN="$MMTWIN_BUILD_DIR/sim/mmtwin"
mkdir -p "$MMTWIN_BUILD_DIR/out"
trace="$MMTWIN_BUILD_DIR/out/internvl-1.2m.csv"
[ -f "$trace" ] || "$MMTWIN" trace gen --preset internvl-1.2m --samples 1267819 --seed 1 -o "$trace"
"$MMTWIN" balance --compare random,length-group,device-group,isf,post-balance \
  --trace "$trace" --model internvl-1.5-6b-20b --dp 16 "$@"
