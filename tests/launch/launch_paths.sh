#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The launch paths backend/README.md documents, run for real (issue 33, item 6), each checked:
#   1. torchrun (Debian's python3-torch) starting 4 ranks of `mmtwin-train run`;
#   2. Slurm on this machine alone (slurmctld, slurmd and munged from Debian's slurm-wlm and munge, configured and
#      started here under a temporary folder, stopped at the end): `srun -n 4 mmtwin-train run`;
#   3. a sweep as a Slurm job array, one shard per array task (`mmtwin sweep --shard i/N`), then `sweep merge`:
#      the merged database holds every run once, with the same figures as the sweep run in one process.
# Usage: tests/launch/launch_paths.sh BUILD_DIR OUT_DIR      (needs root for the daemons; exit 0 when all pass)
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
train="$build/backend/mmtwin-train"
mmtwin="$build/sim/mmtwin"
scenario="$root/scenarios/backend/small.yaml"  # DP2 x PP2: 4 ranks
rm -rf "$out" && mkdir -p "$out"
fail() { echo "launch_paths: FAILED: $*" >&2; exit 1; }
for tool in torchrun srun sbatch slurmctld slurmd munged python3; do
  command -v "$tool" >/dev/null || fail "$tool not found (apt-get install python3-torch slurm-wlm munge)"
done
[ -x "$train" ] || fail "$train not built"

# A measured run folder of N ranks: summary.json "measured" with N ranks in its machine record.
check_run() {  # DIR RANKS WHAT
  python3 - "$1" "$2" "$3" <<'PY' || fail "$3: $1 is not a measured run of $2 ranks"
import json, sys
d, n, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = json.load(open(d + "/summary.json"))
assert s["source"] == "measured", s["source"]
assert s["iterations_replayed"] >= 1
assert s["machine"]["ranks"] == n, s["machine"]
print(f"launch_paths: {what}: {s['iterations_replayed']} measured iterations, p50 "
      f"{s['iteration_time_us']['p50'] / 1e3:.0f} ms, {s['machine']['ranks']} ranks on {s['machine']['host']}")
PY
}

# 1. torchrun: --no_python runs the binary itself; under Python 3.11 Debian's torchrun 1.13 needs its output
#    redirected (--redirects 1 --tee 1) or it crashes in its log handling.
t0=$SECONDS
torchrun --standalone --nproc_per_node 4 --no_python --redirects 1 --tee 1 \
  "$train" run "$scenario" -o "$out/torchrun" >"$out/torchrun.log" 2>&1 ||
  { tail -20 "$out/torchrun.log" >&2; fail "torchrun"; }
check_run "$out/torchrun" 4 "torchrun ($((SECONDS - t0)) s)"

# 2. Slurm on localhost.
slurm="$out/slurm"
mkdir -p "$slurm/state" "$slurm/spool" "$slurm/log"
host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
dd if=/dev/urandom of="$slurm/munge.key" bs=1024 count=1 status=none
chmod 400 "$slurm/munge.key"
munged --force --key-file="$slurm/munge.key" --socket="$slurm/munge.sock" --pid-file="$slurm/munged.pid" \
  --log-file="$slurm/log/munged.log" --seed-file="$slurm/munge.seed"
cat >"$slurm/slurm.conf" <<CONF
ClusterName=mmtwin-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$slurm/munge.sock
StateSaveLocation=$slurm/state
SlurmdSpoolDir=$slurm/spool
SlurmctldPidFile=$slurm/slurmctld.pid
SlurmdPidFile=$slurm/slurmd.pid
SlurmctldLogFile=$slurm/log/slurmctld.log
SlurmdLogFile=$slurm/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host CPUs=8 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$slurm/slurm.conf"
stop_slurm() {
  for p in slurmd slurmctld munged; do
    [ -f "$slurm/$p.pid" ] && kill "$(cat "$slurm/$p.pid")" 2>/dev/null || true
  done
}
trap stop_slurm EXIT
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle || { tail -20 "$slurm/log/"*.log >&2; fail "slurm did not come up"; }

t0=$SECONDS
MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port + 2)) srun -n 4 --export=ALL "$train" run "$scenario" -o "$out/srun" \
  >"$out/srun.log" 2>&1 || { tail -20 "$out/srun.log" >&2; fail "srun"; }
check_run "$out/srun" 4 "srun -n 4 ($((SECONDS - t0)) s)"

# 3. A sweep as a job array: two shards, merged; against the same sweep in one process.
cat >"$out/sweep.yaml" <<'YAML'
name: array-sweep
base:
  trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
  model: internvl-1.5-6b-20b
  parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
  policies: {data: isf, partition: uniform, recompute: full, schedule: 1f1b}
  iterations: 2
  seed: 5
mode: cartesian
axes:
  - {key: policies.data, name: data, values: [random, isf]}
  - {key: policies.recompute, name: recompute, values: [full, adaptive]}
YAML
t0=$SECONDS
job=$(cd "$out" && sbatch --parsable --array=0-1 --output="$out/array-%a.log" \
  --wrap "$mmtwin sweep sweep.yaml --shard \$SLURM_ARRAY_TASK_ID/2 --db shard-\$SLURM_ARRAY_TASK_ID.sqlite")
for _ in $(seq 300); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "job array $job still running after 300 s"
for i in 0 1; do
  [ -f "$out/shard-$i.sqlite" ] || { cat "$out/array-$i.log" >&2; fail "array task $i wrote no database"; }
done
(cd "$out" && "$mmtwin" sweep merge merged.sqlite shard-0.sqlite shard-1.sqlite >/dev/null)
(cd "$out" && "$mmtwin" sweep sweep.yaml --db single.sqlite --json >single.json 2>/dev/null)
(cd "$out" && "$mmtwin" sweep table --db merged.sqlite --json >merged.json)
python3 - "$out" <<'PY' || fail "the merged job array differs from the sweep run in one process"
import json, sys
d = sys.argv[1]
single = {r["key"]: r for r in json.load(open(d + "/single.json"))["rows"]}
merged = {r["key"]: r for r in json.load(open(d + "/merged.json"))["sweeps"][0]["rows"]}
assert len(merged) == 4 and merged.keys() == single.keys(), (sorted(merged), sorted(single))
for k, r in merged.items():
    assert r["status"] == "ok", r
    assert r["summary"]["iteration_time_us_p50"] == single[k]["summary"]["iteration_time_us_p50"], k
print("launch_paths: job array: 2 shards merged into 4 runs, each equal to the sweep run in one process")
PY
echo "launch_paths: job array ($((SECONDS - t0)) s)"
echo "launch_paths: all passed"
