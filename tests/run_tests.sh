#!/usr/bin/env bash
# The README's test command: installs dependencies (apt-get) when missing, builds, runs every test (fast and slow,
# including bounded libFuzzer runs of the trace and spec parsers).
#   MMTWIN_TEST_LABEL=fast  run only the fast label
set -euo pipefail
export MMTWIN_FUZZ=${MMTWIN_FUZZ:-1}
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
mmtwin_build
label=()
[ -n "${MMTWIN_TEST_LABEL:-}" ] && label=(-L "$MMTWIN_TEST_LABEL")
ctest --test-dir "$MMTWIN_BUILD_DIR" --output-on-failure -j "$(nproc)" "${label[@]}"
if [ "$MMTWIN_FUZZ" = 1 ] && [ -z "${MMTWIN_TEST_LABEL:-}" ]; then
  mmtwin_build_fuzzers
  ctest --test-dir "$MMTWIN_BUILD_DIR-fuzz" --output-on-failure -R '_fuzz_bounded$'
fi
