#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# backend/gpu/run_on_gpu.sh OUTDIR [--cpu]: mmtwin's measurements on one GPU in one short visit
# (backend/gpu/README.md). Checks the toolchain first (and stops, exit 2, naming what is missing), builds
# mmtwin-train with every core (MMTWIN_BACKEND_ONLY, CUDA + NCCL, the dependencies of .gpudeps), runs the suites
# scenarios/validation/gpu-h200.suite.yaml (fp32) and gpu-h200-bf16.suite.yaml (bf16 autocast) on GPU 0 (world
# size 1: NCCL allows one rank per GPU), each's calibration runs first, and packs everything into at most 8
# files in OUTDIR:
#   log.txt      this script's whole output (toolchain, build, runs)
#   env.txt      the machine: GPU, driver, CUDA, torch, NCCL, CPU, OS, compiler, commit
#   build.log    the build's output (every attempt)
#   summary.txt  one line per run: exit code, wall seconds, measured iteration times, peak memory
#   runs.tar.gz  the run folders (runs/SUITE/NAME: the measured records mmtwin validate --reuse reads), their logs
# --cpu: the same steps on the CPU machine (CI): Debian's CPU LibTorch, the scenarios shrunk (widths / 64,
# backend.device: cpu, the 2-vCPU cluster preset), Gloo. Exit 0 when every run finished; 1 when one failed;
# 2 when the toolchain or the build is not there.
#   MMTWIN_GPU_DEPS   the dependencies folder (default REPO/.gpudeps; --cpu: used when it is there)
#   MMTWIN_GPU_BUDGET_S  stop starting runs after this many seconds (default 420: one retry fits 15 minutes)
#   MMTWIN_COMMIT     the commit being measured (the device machine's copy has no .git)
set -uo pipefail

usage() {
  echo "usage: backend/gpu/run_on_gpu.sh OUTDIR [--cpu]" >&2
  exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
out=$1
mode=gpu
if [[ $# -eq 2 ]]; then
  [[ $2 == --cpu ]] || usage
  mode=cpu
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mmtwin-gpu.XXXXXX")
log="$out/log.txt"
: >"$log"
exec > >(tee -a "$log") 2>&1
t0=$(date +%s)
budget_s=${MMTWIN_GPU_BUDGET_S:-420}
jobs=$(nproc)
say() { echo "[run_on_gpu $(($(date +%s) - t0)) s] $*"; }

# Everything in OUTDIR, at most 8 files: the runs and their logs as one archive.
pack() {
  if [[ -d $work/runs ]]; then
    tar -C "$work" -czf "$out/runs.tar.gz" runs logs 2>/dev/null
  fi
  [[ -f $work/build.log ]] && cp "$work/build.log" "$out/build.log"
  say "files in $out: $(cd "$out" && ls | tr '\n' ' ')"
}
stop() {
  say "STOP: $*"
  pack
  exit 2
}

# --- 1. The toolchain -----------------------------------------------------------------------------------------
say "mode $mode, repository $root, $jobs cores, budget ${budget_s} s"
missing=()
for tool in cmake ninja g++ python3; do command -v "$tool" >/dev/null || missing+=("$tool")
done
[[ $mode == gpu ]] && ! command -v nvidia-smi >/dev/null && missing+=(nvidia-smi)
((${#missing[@]} == 0)) || stop "not on PATH: ${missing[*]}"
cmake_version=$(cmake --version | head -1 | grep -oE '[0-9]+\.[0-9]+' | head -1)
if ! printf '3.25\n%s\n' "$cmake_version" | sort -V -C; then stop "cmake $cmake_version is older than 3.25"; fi
gxx_major=$(g++ -dumpversion | cut -d. -f1)
((gxx_major >= 11)) || stop "g++ $gxx_major cannot compile C++20 (11 or newer)"
deps=${MMTWIN_GPU_DEPS:-$root/.gpudeps}
if [[ $mode == gpu ]]; then
  [[ -f $deps/MANIFEST.txt ]] || stop "no dependencies folder $deps (backend/gpu/gather_deps.sh on the CPU machine)"
  python3 - <<'EOF' || stop "python3's torch is missing, has no CUDA, or sees no GPU (above)"
import sys
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPUs {torch.cuda.device_count()}, "
      f"C++11 ABI {int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
if not torch.cuda.is_available():
    sys.exit(1)
if not torch._C._GLIBCXX_USE_CXX11_ABI:
    print("this torch uses the old C++ ABI; the gathered libraries use the new one")
    sys.exit(1)
EOF
  [[ -d /usr/local/cuda/bin ]] && export PATH="/usr/local/cuda/bin:$PATH"
  command -v nvcc >/dev/null || say "warning: no nvcc on PATH (CMake may not find the CUDA toolkit)"
else
  [[ -f /usr/include/torch/csrc/api/include/torch/version.h || -n ${CMAKE_PREFIX_PATH:-} ]] ||
    stop "no LibTorch (apt-get install libtorch-dev libgloo-dev)"
fi

# --- 2. The machine -------------------------------------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${MMTWIN_COMMIT:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "mode: $mode"
  echo "os: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null), kernel $(uname -r), $(ldd --version | head -1)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $jobs cores"
  echo "compiler: $(g++ --version | head -1); $(cmake --version | head -1); ninja $(ninja --version)"
  if [[ $mode == gpu ]]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv,noheader |
      sed 's/^/gpu: /'
    nvidia-smi | grep -m1 "CUDA Version" | sed 's/^/nvidia-smi: /'
    python3 -c "import torch; print('torch:', torch.__version__, 'cuda', torch.version.cuda, 'nccl',
'.'.join(map(str, torch.cuda.nccl.version())), 'cudnn', torch.backends.cudnn.version())"
    command -v nvcc >/dev/null && nvcc --version | tail -1 | sed 's/^/nvcc: /'
  else
    echo "torch: $(grep -E 'define TORCH_VERSION_(MAJOR|MINOR|PATCH)' /usr/include/torch/csrc/api/include/torch/version.h |
      awk '{print $3}' | paste -sd. -) (Debian's libtorch-dev, CPU)"
  fi
  [[ -f $deps/MANIFEST.txt ]] && sed 's/^/deps: /' "$deps/MANIFEST.txt"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# --- 3. The build ---------------------------------------------------------------------------------------------
build_attempt() {  # NAME CMAKE_ARGS...: configure and build mmtwin-train in build-gpu-NAME; 0 when built
  local name=$1
  shift
  local bdir="$root/build-gpu-$name"
  say "build ($name): cmake $*"
  {
    echo "=== build attempt $name: $*"
    cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMMTWIN_BACKEND_ONLY=ON "$@" &&
      ninja -C "$bdir" -j "$jobs" mmtwin-train
  } >>"$work/build.log" 2>&1
  local rc=$?
  if ((rc == 0)); then
    train="$bdir/backend/mmtwin-train"
    say "build ($name): done"
  else
    say "build ($name): failed; its last lines:"
    tail -n 25 "$work/build.log" | sed 's/^/    /'
  fi
  return $rc
}
train=""
if [[ $mode == gpu ]]; then
  torch_dir=$(python3 -c "import os, torch; print(os.path.dirname(torch.__file__))")
  # NCCL's header: the pip wheel's (nvidia-nccl-cu*), else the system's.
  nccl_inc=$(python3 -c "import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], 'include'))" 2>/dev/null)
  for d in "$nccl_inc" /usr/include /usr/local/cuda/include; do
    if [[ -n $d && -f $d/nccl.h ]]; then nccl_inc=$d; break; fi
    nccl_inc=""
  done
  nccl_args=(-DMMTWIN_WITH_NCCL=ON "-DMMTWIN_EXTRA_INCLUDE_DIRS=$nccl_inc")
  [[ -z $nccl_inc ]] && { say "no nccl.h found: building without NCCL"; nccl_args=(-DMMTWIN_WITH_NCCL=OFF); }
  common=(-DMMTWIN_WITH_CUDA=ON "${nccl_args[@]}" "-DMMTWIN_DEPS_DIR=$deps" -DCMAKE_CUDA_ARCHITECTURES=90
          -DTORCH_CUDA_ARCH_LIST=9.0)
  # 1) Torch's CMake package; 2) the torch folder without it; 3) the same without Gloo (a torch with no Gloo headers).
  build_attempt package "${common[@]}" ||
    build_attempt folder "${common[@]}" "-DMMTWIN_TORCH_DIR=$torch_dir" ||
    build_attempt nogloo "${common[@]}" "-DMMTWIN_TORCH_DIR=$torch_dir" -DMMTWIN_WITH_GLOO=OFF ||
    stop "mmtwin-train did not build (build.log)"
  # What the dynamic linker searches first (libstdc++ before LibTorch: backend/CMakeLists.txt says why).
  readelf -d "$train" 2>/dev/null | grep NEEDED | head -4 | sed 's/^/    /'
else
  cpu_args=()
  [[ -f $deps/MANIFEST.txt ]] && cpu_args=("-DMMTWIN_DEPS_DIR=$deps")
  build_attempt cpu "${cpu_args[@]}" || stop "mmtwin-train did not build (build.log)"
fi

# --- 4. The runs ----------------------------------------------------------------------------------------------
# The suites in order (fp32, then bf16 autocast), each's calibration scenarios first, then its held-out ones.
mkdir -p "$work/runs" "$work/logs" "$work/scenarios"
: >"$out/summary.txt"
failed=0
total=0
for suite_name in gpu-h200 gpu-h200-bf16; do
  suite="$root/scenarios/validation/$suite_name.suite.yaml"
  scenarios=()
  while read -r f; do scenarios+=("$f"); done < <(grep -oE "$suite_name/[A-Za-z0-9_.-]+\.yaml" "$suite" | awk '!seen[$0]++')
  ((${#scenarios[@]} > 0)) || stop "no scenarios in $suite"
  mkdir -p "$work/runs/$suite_name" "$work/logs/$suite_name" "$work/scenarios/$suite_name"
  # --cpu: bf16 autocast is emulated on CPUs (~20x slower than fp32 here): one scenario, one iteration, shows
  # that the autocast path runs.
  [[ $mode == cpu && $suite_name == *bf16 ]] && scenarios=("${scenarios[0]}")
  for rel in "${scenarios[@]}"; do
    total=$((total + 1))
    src="$root/scenarios/validation/$rel"
    name=$(basename "$rel" .yaml)
    scen="$src"
    if [[ $mode == cpu ]]; then  # shrunk for two CPU cores
      scen="$work/scenarios/$rel"
      sed -e 's/^  device: cuda$/  device: cpu/' -e 's/^  width_divisor: 1$/  width_divisor: 64/' \
        -e 's/^cluster: .*/cluster: cpu-2vcpu-gloo/' -e 's/^iterations: 3$/iterations: 2/' "$src" >"$scen"
      [[ $suite_name == *bf16 ]] && sed -i -e 's/^iterations: 2$/iterations: 1/' "$scen"
    fi
    elapsed=$(($(date +%s) - t0))
    if ((elapsed > budget_s)); then
      say "$rel: not run (${elapsed} s used of the ${budget_s} s budget)"
      echo "$rel skipped (budget)" >>"$out/summary.txt"
      continue
    fi
    say "$rel: running"
    runlog="$work/logs/$suite_name/$name.log"
    r0=$(date +%s.%N)
    timeout --kill-after=10 300 "$train" launch --nproc 1 "$scen" -o "$work/runs/$suite_name/$name" >"$runlog" 2>&1
    rc=$?
    wall=$(awk -v a="$r0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    iters=$(grep -oE '^iteration [0-9]+ \(epoch index [0-9]+\): [0-9]+ ms' "$runlog" | grep -oE '[0-9]+ ms$' |
      tr -d ' ms' | paste -sd, -)
    peak=$(grep -oE 'allocated [0-9]+ bytes, reserved [0-9]+ bytes' "$runlog" | tail -1)
    line="$rel rc=$rc wall_s=$wall iteration_ms=[${iters}]${peak:+ peak: $peak}"
    echo "$line" >>"$out/summary.txt"
    say "$line"
    grep -h "NCCL all-reduce check\|rank 0 on \|has no NCCL" "$runlog" | head -3 | sed 's/^/    /'
    if ((rc != 0)); then
      failed=1
      tail -n 15 "$runlog" | sed 's/^/    /'
    fi
  done
done

# --- 5. The files ---------------------------------------------------------------------------------------------
pack
rm -rf "$work"
say "done: $(grep -c ' rc=0 ' "$out/summary.txt") of $total runs finished"
exit $failed
