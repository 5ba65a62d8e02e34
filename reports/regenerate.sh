#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates every reproduction report (reports/omnibal, reports/orchmllm, reports/longvila, reports/tune, reports/policies,
# reports/validation)
# from a fresh clone: installs the dependencies when missing (apt-get), builds the CLI, the report tool and the
# backend (a validation scenario whose plan changed is measured again with mmtwin-train), then runs
# `mmtwin-report all`. Extra arguments go to mmtwin-report (e.g. --jobs 2, or a report name instead of all).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
mmtwin_build mmtwin mmtwin-report mmtwin-train
cd "$MMTWIN_ROOT"
if [ $# -eq 0 ]; then set -- all; fi
QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} "$MMTWIN_BUILD_DIR/gui/mmtwin-report" "$@"
