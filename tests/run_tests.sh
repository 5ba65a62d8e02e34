#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs dependencies (apt-get) when missing, builds, runs every test (fast and slow,
# including bounded libFuzzer runs of the parsers, and the GPU machine's script on its CPU path).
#   default          one clang build with AddressSanitizer + UndefinedBehaviorSanitizer on every target and the
#                    fuzzers' coverage instrumentation ($MMTWIN_BUILD_DIR-fuzz): the whole suite, then the
#                    bounded fuzz runs, all under the sanitizers (what CI runs); the GUI (qt6-base-dev) is
#                    one of those targets: its QTest suite (label gui) runs offscreen under the sanitizers too
#   MMTWIN_FUZZ=0    the plain Release build ($MMTWIN_BUILD_DIR, g++) and the whole suite, no sanitizers
#   MMTWIN_TEST_LABEL=fast  only the fast label (no fuzz runs)
set -euo pipefail
export MMTWIN_FUZZ=${MMTWIN_FUZZ:-1}
source "$(dirname "${BASH_SOURCE[0]}")/../sim/tools/bootstrap.sh"
mmtwin_install_deps
label=()
[ -n "${MMTWIN_TEST_LABEL:-}" ] && label=(-L "$MMTWIN_TEST_LABEL")
# The GPU machine's one script (backend/gpu/README.md) end to end on the CPU path: the dependencies gathered from
# Debian's packages, the backend-only build against them, both GPU suites shrunk; exit 1 when a run failed.
gpu_script_cpu() {
  if [ -z "${MMTWIN_TEST_LABEL:-}" ] && dpkg -s libtorch-dev >/dev/null 2>&1; then
    "$MMTWIN_ROOT/backend/gpu/gather_deps.sh" "$MMTWIN_BUILD_DIR-gpudeps"
    MMTWIN_GPU_DEPS="$MMTWIN_BUILD_DIR-gpudeps" MMTWIN_GPU_BUDGET_S=3000 \
      "$MMTWIN_ROOT/backend/gpu/run_on_gpu.sh" "$MMTWIN_BUILD_DIR-gpu-out" --cpu
  fi
}
# torchrun, srun and a Slurm job-array sweep, for real (tests/launch/launch_paths.sh), on the plain build's
# mmtwin-train and mmtwin; the Slurm daemons it starts run as root.
launch_paths() {
  if [ -z "${MMTWIN_TEST_LABEL:-}" ] && dpkg -s libtorch-dev >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
      echo "launch_paths: skipped: the local Slurm daemons need root" >&2
      return
    fi
    mmtwin_build mmtwin mmtwin-train
    "$MMTWIN_ROOT/tests/launch/launch_paths.sh" "$MMTWIN_BUILD_DIR" "$MMTWIN_BUILD_DIR-launch"
  fi
}
if [ "$MMTWIN_FUZZ" = 1 ]; then
  mmtwin_build_fuzzers
  # UBSan findings abort (-fno-sanitize-recover); leaks are reported by LeakSanitizer at each test's exit.
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  ctest --test-dir "$MMTWIN_BUILD_DIR-fuzz" --output-on-failure -j "$(nproc)" -E '_fuzz_bounded$' "${label[@]}"
  if [ -z "${MMTWIN_TEST_LABEL:-}" ]; then
    ctest --test-dir "$MMTWIN_BUILD_DIR-fuzz" --output-on-failure -R '_fuzz_bounded$'
  fi
  # The LibTorch backend does not build under clang with Debian's Torch 1.13 (CMakeLists.txt): its tests run on
  # the plain g++ build (real processes over c10d Gloo; Torch itself is not sanitizer-instrumented anyway).
  if [ -z "${MMTWIN_TEST_LABEL:-}" ] && dpkg -s libtorch-dev >/dev/null 2>&1; then
    mmtwin_build mmtwin mmtwin-train backend_slow_test
    ctest --test-dir "$MMTWIN_BUILD_DIR" --output-on-failure -R '^Backend'
  fi
  launch_paths
  gpu_script_cpu
else
  mmtwin_build
  ctest --test-dir "$MMTWIN_BUILD_DIR" --output-on-failure -j "$(nproc)" "${label[@]}"
  launch_paths
  gpu_script_cpu
fi
