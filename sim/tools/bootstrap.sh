#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs mmtwin's Debian build dependencies when missing (apt-get), then configures and builds.
# Used by the README's two commands (scenarios/run_default.sh and tests/run_tests.sh); sourced, not run.
#   MMTWIN_BUILD_DIR   build folder (default: build)
#   MMTWIN_FUZZ=1      also install clang for the sanitizer + libFuzzer build ($MMTWIN_BUILD_DIR-fuzz)
set -euo pipefail

MMTWIN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MMTWIN_BUILD_DIR=${MMTWIN_BUILD_DIR:-$MMTWIN_ROOT/build}

mmtwin_install_deps() {
  local pkgs=(cmake ninja-build g++ libgtest-dev libbenchmark-dev nlohmann-json3-dev libyaml-cpp-dev
              libboost-graph-dev libeigen3-dev libsqlite3-dev libsimgrid-dev pkg-config libcli11-dev
              libfmt-dev
              # Chakra execution traces (sim/interop): protobuf's code generator and library.
              protobuf-compiler libprotobuf-dev
              # Gzip-compressed timelines (sim/whatif: torch.profiler's .json.gz traces).
              zlib1g-dev
              # The real backend (backend/): LibTorch with c10d Gloo, and OpenBLAS behind it (Debian's default
              # libblas.so.3 is the reference BLAS, ~13x slower on the backend's small scenario).
              libtorch-dev libgloo-dev libopenblas0-pthread
              # The GUI (gui/): Qt6 Widgets and QTest (LGPL; no Qt Charts).
              qt6-base-dev
              # The launch paths tested for real (tests/launch/launch_paths.sh): torchrun from Debian's
              # python3-torch, and a one-machine Slurm (slurmctld, slurmd, munged).
              python3-torch slurm-wlm munge)
  if [ "${MMTWIN_FUZZ:-0}" = 1 ]; then pkgs+=(clang libclang-rt-14-dev); fi
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "mmtwin: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# mmtwin_build [TARGET...]: configure (Release, Ninja) and build the given targets (default: all). Under CI
# (CI=true) warnings are errors.
mmtwin_build() {
  local werror=OFF
  [ "${CI:-}" = true ] && werror=ON
  cmake -S "$MMTWIN_ROOT" -B "$MMTWIN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMMTWIN_WERROR=$werror \
    >/dev/null
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$MMTWIN_BUILD_DIR" -j "$(nproc)" "${targets[@]}"
}

# mmtwin_build_fuzzers: the sanitizer build in $MMTWIN_BUILD_DIR-fuzz (clang): every target (libraries, CLI,
# tests, benchmarks) with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's coverage counters, plus
# the *_fuzz targets. The test command runs the whole suite and the bounded fuzz runs in it. Under CI (CI=true)
# warnings are errors.
mmtwin_build_fuzzers() {
  local werror=OFF
  [ "${CI:-}" = true ] && werror=ON
  CXX=clang++ cmake -S "$MMTWIN_ROOT" -B "$MMTWIN_BUILD_DIR-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMMTWIN_BUILD_FUZZERS=ON -DMMTWIN_BUILD_BENCHMARKS=ON -DMMTWIN_WERROR=$werror >/dev/null
  cmake --build "$MMTWIN_BUILD_DIR-fuzz" -j "$(nproc)"
}
