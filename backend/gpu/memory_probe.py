# SPDX-License-Identifier: Apache-2.0
"""backend/gpu/memory_probe.py OUTDIR [--budget-s S] [--smoke]: the memory terms mmtwin's memory walk adds to the
allocated peak, measured on one GPU (sim/core/plan/memory.h; traces/clusters/README.md).

Two tables, written atomically into OUTDIR:

context.csv: the device memory a process holds outside PyTorch's caching allocator (used = total - free from
    cudaMemGetInfo, less the allocator's reserved bytes), after each step that adds some: the CUDA context, the
    first cuBLAS bf16 GEMM (handle and workspace), FlashAttention-2 forward and backward, an NCCL communicator
    (world size 1, one all-reduce). The presets' cuda_context_bytes and workspace_bytes are these terms.

fragmentation.csv: the caching allocator's reserved bytes against its allocated peak while a real transformer
    (Llama-3-8B's blocks: RMSNorm, causal flash attention, SwiGLU; bf16, autograd) trains on micro-batches whose
    token counts are drawn from distributions of growing spread, with one micro-batch in flight (gradient
    accumulation) and with a 1F1B pipeline's first stage (k micro-batches in flight). Per run: the per-micro-batch
    footprint as memory.h defines it (the activations its forward leaves held plus its largest forward / backward
    transient; min and max over every micro-batch of every iteration), the allocated and reserved peaks, and the
    allocator's retry and cudaMalloc counts. No memory pressure: the allocator never frees a cached block, so the
    reserved peak is what nvidia-smi shows a job (what the papers' "memory left" reads). A few runs repeat with
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (a fresh process: the setting is read at start).

--trace: instead, record the caching allocator's events (torch.cuda.memory._record_memory_history) of a few of
    the runs above and write each as trace-RUN.csv.gz (seq, action, addr, size: alloc / free_completed of blocks,
    segment_alloc / segment_free of cudaMalloc'd segments), with the run's row in fragmentation-traced.csv: ground
    truth for a model of the allocator itself.

--long N: instead, four runs of N iterations each (lognormal sigma 1 and uniform +-50% with 4 in flight, lognormal
    sigma 1 with one, bimodal with 4), the allocated and reserved peaks after every iteration with its micro-batch
    sizes in long.csv: how the reserved peak of a long job grows.

--smoke: the same code paths on the CPU with tiny widths (the CUDA statistics read as 0), to check the script.
"""
import argparse
import csv
import gc
import json
import os
import random
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FRAG_HEADER = ["run", "alloc_conf", "schedule", "in_flight", "distribution", "layers", "hidden", "micro_batches",
               "iterations", "tokens_min", "tokens_mean", "tokens_max", "held_min_bytes", "held_max_bytes",
               "footprint_min_bytes", "footprint_max_bytes", "static_bytes", "allocated_peak_bytes",
               "reserved_peak_bytes", "reserved_start_bytes", "alloc_retries", "cuda_mallocs", "seconds"]
CONTEXT_HEADER = ["step", "used_bytes", "reserved_bytes", "outside_allocator_bytes", "note"]


def rms_norm(hidden, **kw):
    """nn.RMSNorm (torch 2.4+); a plain one for the --smoke check on older CPU builds."""
    if hasattr(nn, "RMSNorm"):
        return nn.RMSNorm(hidden, **kw)

    class Rms(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden, **kw))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    return Rms()


def causal_attention(q, k, v):
    """FlashAttention-2 through sdpa with grouped-query heads; the --smoke check's older CPU builds lack it."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    t = q.shape[2]
    s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s.softmax(-1) @ v


class Block(nn.Module):
    """One Llama-3-8B block (grouped-query attention as 32 query heads over 8 KV heads, head dim 128)."""

    def __init__(self, hidden, heads, kv_heads, ffn, dtype, dev):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        kw = dict(dtype=dtype, device=dev)
        self.n1 = rms_norm(hidden, **kw)
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * self.hd, bias=False, **kw)
        self.o = nn.Linear(hidden, hidden, bias=False, **kw)
        self.n2 = rms_norm(hidden, **kw)
        self.w13 = nn.Linear(hidden, 2 * ffn, bias=False, **kw)
        self.w2 = nn.Linear(ffn, hidden, bias=False, **kw)

    def forward(self, x):
        t = x.shape[1]
        qkv = self.qkv(self.n1(x))
        q, k, v = qkv.split([self.heads * self.hd, self.kv_heads * self.hd, self.kv_heads * self.hd], dim=-1)
        q = q.view(1, t, self.heads, self.hd).transpose(1, 2)
        k = k.view(1, t, self.kv_heads, self.hd).transpose(1, 2)
        v = v.view(1, t, self.kv_heads, self.hd).transpose(1, 2)
        a = causal_attention(q, k, v)
        x = x + self.o(a.transpose(1, 2).reshape(1, t, -1))
        g, u = self.w13(self.n2(x)).chunk(2, dim=-1)
        return x + self.w2(F.silu(g) * u)


def draw(dist, n, rng, mean, cap):
    """n token counts of a distribution named `dist`, mean about `mean`, each in [256, cap]."""
    if dist == "equal":
        out = [mean] * n
    elif dist.startswith("uniform"):
        s = float(dist[len("uniform"):])
        out = [int(rng.uniform(mean * (1 - s), mean * (1 + s))) for _ in range(n)]
    elif dist.startswith("lognormal") or dist.startswith("sorted-lognormal"):
        sigma = float(dist.split("lognormal")[1])
        mu = __import__("math").log(mean) - sigma * sigma / 2
        out = [int(rng.lognormvariate(mu, sigma)) for _ in range(n)]
        if dist.startswith("sorted"):
            out.sort()
    elif dist == "bimodal":
        out = [mean // 6 if rng.random() < 0.5 else 2 * mean - mean // 6 for _ in range(n)]
    else:
        raise ValueError(dist)
    return [min(cap, max(256, t)) for t in out]


class Meter:
    """The allocator's statistics around one forward or backward: the running peaks (reset before each op, so
    the op's own transient is seen) and each micro-batch's held bytes and transient."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.alloc_peak = 0
        self.reserved_peak = 0

    def allocated(self):
        return torch.cuda.memory_allocated() if self.cuda else 0

    def run(self, fn):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        before = self.allocated()
        out = fn()
        if self.cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
            self.alloc_peak = max(self.alloc_peak, peak)
            self.reserved_peak = max(self.reserved_peak, torch.cuda.max_memory_reserved())
        else:
            peak = 0
        after = self.allocated()
        return out, before, after, max(0, peak - max(before, after))


def fragmentation_run(args, dev, blocks, name, dist, in_flight, seed):
    cuda = dev.type == "cuda"
    rng = random.Random(seed)
    meter = Meter(cuda)
    static = meter.allocated()
    reserved_start = torch.cuda.memory_reserved() if cuda else 0
    stats0 = torch.cuda.memory_stats() if cuda else {}
    t0 = time.time()
    tokens_all, held, foot = [], [], []

    def forward(t):
        x = torch.randn(1, t, args.hidden, device=dev, dtype=blocks[0].qkv.weight.dtype, requires_grad=True)
        y = x
        for b in blocks:
            y = b(y)
        return y.float().square().mean()

    for iteration in range(args.iterations):
        toks = draw(dist, args.micro_batches, rng, args.mean_tokens, args.max_tokens)
        tokens_all += toks
        queue = []  # (loss, held bytes, forward transient)
        order = []  # 1F1B on the first of k stages: k - 1 warm-up forwards, then one forward, one backward
        m = len(toks)
        w = min(in_flight - 1, m)
        order += [("F", i) for i in range(w)]
        for i in range(w, m):
            order += [("F", i), ("B", i - w)]
        order += [("B", i) for i in range(m - w, m)]
        for kind, i in order:
            if kind == "F":
                loss, before, after, trans = meter.run(lambda: forward(toks[i]))
                queue.append((loss, after - before, trans))
            else:
                loss, h, ftrans = queue.pop(0)
                _, _, _, btrans = meter.run(lambda: loss.backward())
                held.append(h)
                foot.append(h + max(ftrans, btrans))
                del loss
        if args.per_iteration is not None:  # --long: the peaks so far after each iteration, and its sizes
            args.per_iteration.append(dict(run=name, iteration=iteration, tokens=" ".join(map(str, toks)),
                                           allocated_peak_bytes=meter.alloc_peak,
                                           reserved_peak_bytes=meter.reserved_peak))
    secs = time.time() - t0
    stats = torch.cuda.memory_stats() if cuda else {}
    row = dict(run=name, alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
               schedule="ga" if in_flight == 1 else "1f1b", in_flight=in_flight, distribution=dist,
               layers=len(blocks), hidden=args.hidden, micro_batches=args.micro_batches,
               iterations=args.iterations, tokens_min=min(tokens_all),
               tokens_mean=f"{sum(tokens_all) / len(tokens_all):.1f}", tokens_max=max(tokens_all),
               held_min_bytes=min(held), held_max_bytes=max(held), footprint_min_bytes=min(foot),
               footprint_max_bytes=max(foot), static_bytes=static, allocated_peak_bytes=meter.alloc_peak,
               reserved_peak_bytes=meter.reserved_peak, reserved_start_bytes=reserved_start,
               alloc_retries=stats.get("num_alloc_retries", 0) - stats0.get("num_alloc_retries", 0),
               cuda_mallocs=stats.get("segment.all.allocated", 0) - stats0.get("segment.all.allocated", 0),
               seconds=f"{secs:.1f}")
    print(json.dumps(row), flush=True)
    return row


def context_rows(dev):
    """The memory outside the allocator after each step that adds some."""
    rows = []

    def note(step, text=""):
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        used, res = total - free, torch.cuda.memory_reserved()
        rows.append(dict(step=step, used_bytes=used, reserved_bytes=res, outside_allocator_bytes=used - res,
                         note=text))
        print(f"memory_probe: {step}: used {used / 2**20:.0f} MiB, reserved {res / 2**20:.0f} MiB, outside "
              f"{(used - res) / 2**20:.0f} MiB", flush=True)

    torch.zeros(1, device=dev)
    note("cuda_context", f"torch {torch.__version__}, CUDA {torch.version.cuda}, lazy module loading "
                         f"{os.environ.get('CUDA_MODULE_LOADING', 'default (lazy)')}")
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()
    note("cublas_bf16_gemm", "first bf16 matmul: cuBLAS / cuBLASLt handle and workspace")
    q = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    note("flash_attention", "sdpa forward + backward (flash backend)")
    x = torch.randn(1 << 20, device=dev, dtype=torch.float32)
    try:
        import torch.distributed as dist
        path = f"/tmp/mmtwin-memprobe-{os.getpid()}"
        dist.init_process_group("nccl", init_method=f"file://{path}", rank=0, world_size=1,
                                device_id=dev)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        note("nccl_communicator", "world size 1, one all-reduce of 4 MiB")
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 (the table says what failed)
        rows.append(dict(step="nccl_communicator", used_bytes="", reserved_bytes="", outside_allocator_bytes="",
                         note=f"failed: {str(e).splitlines()[0][:120]}"))
    del a, q, x
    return rows


def write_csv(path, header, rows, comments):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        for c in comments:
            f.write(f"# {c}\n")
        wr = csv.DictWriter(f, fieldnames=header)
        wr.writeheader()
        for r in rows:
            wr.writerow({h: r.get(h, "") for h in header})
    os.replace(tmp, path)


RUNS = [  # (distribution, in-flight micro-batches)
    ("equal", 1), ("equal", 4),
    ("uniform0.25", 1), ("uniform0.25", 4),
    ("uniform0.5", 1), ("uniform0.5", 4),
    ("uniform0.75", 1), ("uniform0.75", 4),
    ("lognormal0.5", 1), ("lognormal0.5", 4),
    ("lognormal1.0", 1), ("lognormal1.0", 4),
    ("bimodal", 1), ("bimodal", 4),
    ("sorted-lognormal1.0", 4),
]
EXPANDABLE = [("equal", 4), ("lognormal1.0", 4), ("bimodal", 4)]
LONG = [("lognormal1.0", 4), ("uniform0.5", 4), ("lognormal1.0", 1), ("bimodal", 4)]
TRACED = [("equal", 4), ("uniform0.25", 1), ("uniform0.75", 4), ("lognormal1.0", 1), ("lognormal0.5", 4),
          ("bimodal", 4)]


def write_trace(path, start, snapshot):
    """The allocator's events of device 0 as CSV (gzip): seq, action, addr, size. First the state when the
    recording started (`start`, a snapshot: action initial_segment per segment, then initial_active_block /
    initial_inactive_block per block in address order), then the recorded events."""
    import gzip
    traces = snapshot.get("device_traces", [[]])
    events = traces[0] if traces else []
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", newline="") as f:
        f.write("seq,action,addr,size\n")
        seq = 0
        for seg in sorted(start.get("segments", []), key=lambda g: g["address"]):
            f.write(f"{seq},initial_segment,{seg['address']},{seg['total_size']}\n")
            seq += 1
            addr = seg["address"]
            for b in seg.get("blocks", []):
                state = "initial_active_block" if b.get("state", "").startswith("active") else "initial_inactive_block"
                f.write(f"{seq},{state},{addr},{b['size']}\n")
                addr += b["size"]
                seq += 1
        for e in events:
            f.write(f"{seq},{e.get('action')},{e.get('addr', 0)},{e.get('size', 0)}\n")
            seq += 1
    os.replace(tmp, path)
    return len(events)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--smoke", action="store_true", help="the CPU, tiny widths: checks the script")
    ap.add_argument("--only", help="internal: run these 'dist:in_flight' pairs (comma separated), print rows")
    ap.add_argument("--trace", action="store_true", help="record the allocator's events of a few runs")
    ap.add_argument("--long", type=int, default=0, help="four runs of this many iterations, peaks per iteration")
    args = ap.parse_args()
    cuda = not args.smoke
    if cuda and not torch.cuda.is_available():
        print("memory_probe: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    args.hidden, heads, kv, ffn, layers = (4096, 32, 8, 14336, 4) if cuda else (64, 4, 2, 128, 2)
    args.micro_batches, args.iterations = (8, 4) if cuda else (4, 2)
    args.per_iteration = None
    if args.long > 0:
        args.iterations, args.per_iteration = args.long, []
    args.mean_tokens, args.max_tokens = (6144, 16384) if cuda else (300, 1024)
    t0 = time.time()
    os.makedirs(args.outdir, exist_ok=True)

    ctx = [] if (not cuda or args.only or args.trace or args.long) else context_rows(dev)
    blocks = [Block(args.hidden, heads, kv, ffn, torch.bfloat16, dev) for _ in range(layers)]
    for b in blocks:  # the gradients exist from the start, as after a training step
        for p in b.parameters():
            p.grad = torch.zeros_like(p)
    runs = TRACED if args.trace else LONG if args.long > 0 else RUNS
    if args.only:
        runs = [(d, int(k)) for d, k in (p.split(":") for p in args.only.split(","))]
    rows = []
    for i, (dist, k) in enumerate(runs):
        if time.time() - t0 > args.budget_s:
            print(f"memory_probe: budget of {args.budget_s:.0f} s reached; {len(runs) - i} runs not started",
                  file=sys.stderr)
            break
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
        name = f"{dist}-k{k}"
        seed = 1000 + (RUNS.index((dist, k)) if args.trace else i)  # a traced run draws the sizes of its RUNS row
        if args.long > 0:
            seed = 2000 + i
        try:
            if args.trace and cuda:
                torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                         max_entries=2_000_000)
                start = torch.cuda.memory._snapshot()
            rows.append(fragmentation_run(args, dev, blocks, name, dist, k, seed=seed))
            if args.trace and cuda:
                n = write_trace(os.path.join(args.outdir, f"trace-{name}.csv.gz"), start,
                                torch.cuda.memory._snapshot())
                torch.cuda.memory._record_memory_history(enabled=None)
                print(f"memory_probe: {name}: {n} allocator events", flush=True)
        except RuntimeError as e:
            print(f"memory_probe: {dist} k={k} failed: {str(e).splitlines()[0]}", file=sys.stderr)
    if args.only:
        return 0
    if args.long > 0:
        write_csv(os.path.join(args.outdir, "long.csv"),
                  ["run", "iteration", "tokens", "allocated_peak_bytes", "reserved_peak_bytes"], args.per_iteration,
                  [f"memory_probe.py --long {args.long}, commit {os.environ.get('MMTWIN_COMMIT', '?')}; peaks since "
                   f"the run began, after each iteration; tokens: its micro-batches in order (seed 2000 + run)"])
        write_csv(os.path.join(args.outdir, "long-runs.csv"), FRAG_HEADER, rows, ["the --long runs' rows"])
        return 0
    if args.trace:
        write_csv(os.path.join(args.outdir, "fragmentation-traced.csv"), FRAG_HEADER, rows,
                  [f"traced runs of backend/gpu/memory_probe.py --trace, commit {os.environ.get('MMTWIN_COMMIT', '?')}"])
        return 0
    # The expandable-segments runs in a fresh process (the allocator reads its configuration at start).
    left = args.budget_s - (time.time() - t0)
    if left > 30:
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        cmd = [sys.executable, __file__, args.outdir, "--only", ",".join(f"{d}:{k}" for d, k in EXPANDABLE),
               "--budget-s", str(left - 10)] + (["--smoke"] if args.smoke else [])
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=left + 60)
        sys.stderr.write(p.stderr)
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
                print(line, flush=True)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu (smoke)"
    head = [f"device: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}; backend/gpu/memory_probe.py",
            f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, commit "
            f"{os.environ.get('MMTWIN_COMMIT', 'unknown')}, {time.time() - t0:.0f} s"]
    write_csv(os.path.join(args.outdir, "fragmentation.csv"), FRAG_HEADER, rows,
              head + [f"model: {layers} Llama-3-8B blocks (hidden {args.hidden}, ffn {ffn}, {heads} heads, {kv} KV "
                      f"heads), bf16 weights and gradients, no optimizer; {args.micro_batches} micro-batches x "
                      f"{args.iterations} iterations per run, one packed sequence each"])
    if ctx:
        write_csv(os.path.join(args.outdir, "context.csv"), CONTEXT_HEADER, ctx, head)
    print(f"memory_probe: {len(rows)} runs in {time.time() - t0:.0f} s -> {args.outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
