# SPDX-License-Identifier: Apache-2.0
"""backend/gpu/kernel_sweep.py OUT.csv [--budget-s S]: kernel times on one GPU, ground truth for the compute curves.

The cluster presets price every layer with curves (sim/core/cost/cost_model.h; traces/clusters/README.md) whose
GPU constants come from published benchmarks and assumptions: a GEMM's rate falls with each dimension as
d / (d + gemm_half_dim), flash attention's with the span and head dim, streaming kernels run at a share of the HBM
bandwidth. This script measures the same three kernel families on the GPU it runs on, with PyTorch's own kernels
(cuBLAS through torch.matmul, FlashAttention-2 through scaled_dot_product_attention, elementwise copies), so the
constants can be fitted on a calibration half of the rows and checked on the other half (reports/kernels/).

Every row: family, dtype, the shape, the FLOPs or bytes the cost model counts, the median time of `reps` timed
calls (CUDA events around each call, after warm-up calls), and the rate. Times in microseconds. No host
synchronisation inside a timed call, and the GPU is kept busy while the host queues the timed calls
(torch.cuda._sleep), so a short kernel is timed as the kernel, not as the host's launch path. Stops starting new rows after --budget-s seconds (default 150) and says so.
"""
import argparse
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed_us(fn, reps, warmup=3):
    """The median and minimum of `reps` timed calls, in microseconds; (nan, nan) when the call fails."""
    try:
        return _timed_us(fn, reps, warmup)
    except RuntimeError as e:
        print(f"kernel_sweep: failed: {e}".splitlines()[0], file=sys.stderr)
        torch.cuda.synchronize()
        return float("nan"), float("nan")


def _timed_us(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    # The GPU spins first while the host queues every timed call: without it a kernel shorter than the host's
    # launch path (about 25 us from Python) would be timed as that path, the GPU idle between the two events.
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(500_000 * reps)
    for i in range(reps):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    return times[len(times) // 2], times[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("kernel_sweep: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(dev)
    t0 = time.time()
    rows = []
    header = ["family", "dtype", "m", "n", "k", "batch", "heads", "span", "head_dim", "causal", "pass",
              "work", "median_us", "min_us", "rate_per_s"]

    def over_budget():
        return time.time() - t0 > args.budget_s

    def add(**kw):
        if "pass_" in kw:
            kw["pass"] = kw.pop("pass_")
        row = {h: kw.get(h, "") for h in header}
        rows.append(row)
        print(",".join(str(row[h]) for h in header), flush=True)

    torch.backends.cuda.matmul.allow_tf32 = False
    # 1. GEMMs: a grid of m, n, k (the curve's three dimensions), and the shapes of the zoo's layers.
    dims = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    shapes = []
    for m in dims:
        for n in [256, 1024, 4096, 14336]:
            for k in [256, 1024, 4096]:
                shapes.append((m, n, k))
    # Llama-3-8B (hidden 4096, ffn 14336, kv 1024) and InternViT-6B (3200, ffn 12800) at 1k-16k tokens.
    for t in [1024, 2048, 4096, 8192, 16384]:
        shapes += [(t, 6144, 4096), (t, 4096, 4096), (t, 28672, 4096), (t, 4096, 14336),
                   (t, 9600, 3200), (t, 3200, 3200), (t, 12800, 3200), (t, 3200, 12800)]
    for dtype, name in [(torch.bfloat16, "bf16"), (torch.float32, "fp32")]:
        for (m, n, k) in shapes:
            if over_budget():
                break
            if dtype == torch.float32 and (m, n, k) not in shapes[-40:]:
                continue  # fp32 (no TF32): the zoo's shapes only, for the fp32 suite
            a = torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(k, n, device=dev, dtype=dtype)
            flops = 2.0 * m * n * k
            reps = 20 if flops < 1e12 else 8
            med, mn = timed_us(lambda: torch.matmul(a, b), reps)
            add(family="gemm", dtype=name, m=m, n=n, k=k, pass_="fwd", work=flops, median_us=f"{med:.2f}",
                min_us=f"{mn:.2f}", rate_per_s=f"{flops / (med * 1e-6):.4g}")
            del a, b
    # 1b. A Linear layer's three GEMMs on the zoo's shapes, as nn.Linear runs them (weight W is n x k): the forward
    # x W^T, the input gradient dy W, the weight gradient dy^T x. Rows give the output's m x n and the inner k.
    for (m, n, k) in shapes[-40:]:
        if over_budget():
            break
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
        for name, fn, (gm, gn, gk) in [("linear_fwd", lambda: F.linear(x, w), (m, n, k)),
                                       ("linear_dgrad", lambda: torch.matmul(dy, w), (m, k, n)),
                                       ("linear_wgrad", lambda: torch.matmul(dy.t(), x), (n, k, m))]:
            flops = 2.0 * m * n * k
            med, mn = timed_us(fn, 8)
            add(family="gemm", dtype="bf16", m=gm, n=gn, k=gk, pass_=name, work=flops, median_us=f"{med:.2f}",
                min_us=f"{mn:.2f}", rate_per_s=f"{flops / (med * 1e-6):.4g}")
        del x, w, dy
    # 2. Flash attention (bf16, [batch, heads, span, head_dim]), forward and forward + backward.
    for causal in [True, False]:
        for head_dim in [64, 128]:
            for span in [256, 512, 1024, 2048, 4096, 8192, 16384]:
                if over_budget():
                    break
                heads = 32 if head_dim == 128 else 16
                batch = max(1, 16384 // span)
                q, k_, v = (torch.randn(batch, heads, span, head_dim, device=dev, dtype=torch.bfloat16,
                                        requires_grad=True) for _ in range(3))
                flops = 4.0 * batch * heads * span * span * head_dim * (0.5 if causal else 1.0)
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    fwd = lambda: F.scaled_dot_product_attention(q, k_, v, is_causal=causal)
                    med, mn = timed_us(fwd, 10)
                    add(family="attn", dtype="bf16", batch=batch, heads=heads, span=span, head_dim=head_dim,
                        causal=int(causal), pass_="fwd", work=flops, median_us=f"{med:.2f}", min_us=f"{mn:.2f}",
                        rate_per_s=f"{flops / (med * 1e-6):.4g}")
                    try:
                        o = fwd()
                    except RuntimeError:
                        continue
                    g = torch.randn_like(o)
                    bwd = lambda: torch.autograd.grad(o, (q, k_, v), g, retain_graph=True)
                    med, mn = timed_us(bwd, 10)
                    add(family="attn", dtype="bf16", batch=batch, heads=heads, span=span, head_dim=head_dim,
                        causal=int(causal), pass_="bwd", work=2.5 * flops, median_us=f"{med:.2f}",
                        min_us=f"{mn:.2f}", rate_per_s=f"{2.5 * flops / (med * 1e-6):.4g}")
                del q, k_, v
    # 3. Streaming kernels: bytes read + written, bf16.
    for numel in [2**20, 2**22, 2**24, 2**26, 2**28]:
        if over_budget():
            break
        x = torch.randn(numel, device=dev, dtype=torch.bfloat16)
        y = torch.randn(numel, device=dev, dtype=torch.bfloat16)
        for name, fn, nbytes in [("copy", lambda: x.clone(), 4 * numel), ("add", lambda: x + y, 6 * numel),
                                 ("gelu", lambda: F.gelu(x), 4 * numel)]:
            med, mn = timed_us(fn, 20)
            add(family="stream", dtype="bf16", m=numel, pass_=name, work=nbytes, median_us=f"{med:.2f}",
                min_us=f"{mn:.2f}", rate_per_s=f"{nbytes / (med * 1e-6):.4g}")
        del x, y
    x = torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.ones(4096, device=dev, dtype=torch.bfloat16)
    med, mn = timed_us(lambda: F.layer_norm(x, (4096,), w), 20)
    add(family="stream", dtype="bf16", m=16384, n=4096, pass_="layernorm", work=4 * x.numel(),
        median_us=f"{med:.2f}", min_us=f"{mn:.2f}", rate_per_s=f"{4 * x.numel() / (med * 1e-6):.4g}")

    tmp = args.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(f"# device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, "
                f"CUDA {torch.version.cuda}, cuBLAS via torch.matmul (TF32 off), FlashAttention-2 via sdpa\n")
        f.write(f"# date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, commit "
                f"{os.environ.get('MMTWIN_COMMIT', 'unknown')}, backend/gpu/kernel_sweep.py, "
                f"{time.time() - t0:.0f} s{', budget reached' if over_budget() else ''}\n")
        wr = csv.DictWriter(f, fieldnames=header)
        wr.writeheader()
        for r in rows:
            wr.writerow(r)
    os.replace(tmp, args.out)
    print(f"kernel_sweep: {len(rows)} rows in {time.time() - t0:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
