"""The probe: all-reduce bus bandwidth over a sweep of sizes, bf16 GEMM TFLOP/s on every GPU, stragglers.

Started by torchrun on every node of a job (the presets' probe stage), or by hand:
    PYTHONPATH=scripts torchrun --nproc-per-node=8 -m smoke.probe --out probe.json
NCCL on GPUs; gloo on CPU (functional mode), where the numbers only show the plumbing works.
Bus bandwidth follows nccl-tests: busbw = algbw x 2(n-1)/n, with the slowest rank's time.
Rank 0 writes the JSON result; the verdict judges it against the preset's expectations.
"""
from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist

from smoke import runfolder
from smoke.dist_exit import finish
from smoke.localize.inprobe import in_probe
from smoke.slurm import node_name
from smoke.vocab import MIB, PROBE_CPU_SIZES, PROBE_GPU_SIZES
from smoke.watchdog.beat import beat


def timed_allreduce(tensor: torch.Tensor, iters: int, warmup: int, cuda: bool) -> float:
    """Seconds per all-reduce on this rank (mean over iters, after warmup)."""
    for _ in range(warmup):
        dist.all_reduce(tensor)
        beat()
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(tensor)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000 / iters
    begin = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
        beat()
    return (time.perf_counter() - begin) / iters


def gemm_tflops(n: int, iters: int, cuda: bool) -> float:
    dtype = torch.bfloat16 if cuda else torch.float32
    device = "cuda" if cuda else "cpu"
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b)
    if cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            torch.matmul(a, b)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1000 / iters
    else:
        begin = time.perf_counter()
        for _ in range(iters):
            torch.matmul(a, b)
        seconds = (time.perf_counter() - begin) / iters
    return 2 * n**3 / seconds / 1e12


def stragglers(values: list[float], higher_is_better: bool = True) -> list[int]:
    """Ranks further from the median than max(MAD, 10% of the median), on the slow side."""
    if len(values) < 3:
        return []
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    limit = max(mad, 0.1 * abs(median))
    slow = [i for i, v in enumerate(values) if (median - v if higher_is_better else v - median) > limit]
    return slow


def gather(value: float, cuda: bool) -> list[float]:
    t = torch.tensor([value], dtype=torch.float64, device="cuda" if cuda else "cpu")
    out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [x.item() for x in out]


def gather_text(text: str, cuda: bool, width: int = 64) -> list[str]:
    """all_gather of a short string as bytes (all_gather_object would need numpy)."""
    raw = text.encode()[:width].ljust(width, b"\0")
    t = torch.tensor(list(raw), dtype=torch.uint8, device="cuda" if cuda else "cpu")
    out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [bytes(x.tolist()).rstrip(b"\0").decode(errors="replace") for x in out]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--sizes", help="comma-separated byte counts (default: 1 MiB..4 GiB on GPU, 64 KiB..16 MiB on CPU)")
    parser.add_argument("--iters", type=int, help="timed all-reduces per size (default 20 on GPU, 3 on CPU)")
    parser.add_argument("--warmup", type=int, help="untimed all-reduces first (default 5 on GPU, 1 on CPU)")
    parser.add_argument("--gemm-n", type=int, default=None, help="GEMM size (default 8192 on GPU, 256 on CPU)")
    parser.add_argument("--gemm-iters", type=int, help="timed GEMMs (default 20 on GPU, 2 on CPU)")
    parser.add_argument("--plot", help="write a PNG of bus bandwidth against size (needs matplotlib)")
    args = parser.parse_args(argv)

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    # Bounded: a hung rank fails the stage after SMOKE_COLLECTIVE_TIMEOUT; localization then finds it.
    dist.init_process_group("nccl" if cuda else "gloo",
                            timeout=datetime.timedelta(seconds=float(os.environ.get("SMOKE_COLLECTIVE_TIMEOUT", "600"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    started = time.perf_counter()
    args.iters = args.iters or (20 if cuda else 3)
    args.warmup = args.warmup if args.warmup is not None else (5 if cuda else 1)
    args.gemm_iters = args.gemm_iters or (20 if cuda else 2)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (PROBE_GPU_SIZES if cuda else PROBE_CPU_SIZES)
    sweep = []
    for size in sizes:
        dtype = torch.bfloat16 if cuda else torch.float32
        count = size // torch.tensor([], dtype=dtype).element_size()
        tensor = torch.ones(count, dtype=dtype, device="cuda" if cuda else "cpu")
        iters = args.iters if size <= 256 * MIB else max(5, args.iters // 4)
        seconds = max(gather(timed_allreduce(tensor, iters, args.warmup, cuda), cuda))
        beat()  # on GPUs the timed loop only enqueues: a size finished is the progress to report
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (world - 1) / world
        sweep.append({"bytes": size, "time_us": round(seconds * 1e6, 1), "algbw_gbs": round(algbw, 2),
                      "busbw_gbs": round(busbw, 2)})
        del tensor
        if rank == 0:
            print(f"probe: all_reduce {size / MIB:10.1f} MiB  {seconds * 1e6:12.1f} us  "
                  f"algbw {algbw:8.2f} GB/s  busbw {busbw:8.2f} GB/s", flush=True)
    n = args.gemm_n or (8192 if cuda else 256)
    tflops = gather(gemm_tflops(n, args.gemm_iters, cuda), cuda)
    slow_gemm = stragglers(tflops)
    # each rank's Slurm node name (what suspects and --exclude use) and host name (what NCCL's log
    # lines start with, cut at the first dot), to tell which node a NCCL line comes from
    names = [text.split(" ", 1) + [""] for text in gather_text(f"{node_name()} {socket.gethostname()}", cuda, 160)]
    hosts = [name for name, *_ in names]
    host_names = {host.split(".")[0]: name for name, host, *_ in names if host}
    per_node = in_probe(hosts, cuda)  # the trigger of localization (SMOKE_LOCALIZE=auto)
    wall = time.perf_counter() - started
    if rank == 0:
        for r, t in enumerate(tflops):
            flag = "  STRAGGLER" if r in slow_gemm else ""
            print(f"probe: gemm rank {r:4d} on {hosts[r]}: {t:8.1f} TFLOP/s ({'bf16' if cuda else 'fp32'} {n}^3){flag}")
        result = {"world_size": world, "backend": dist.get_backend(), "device": torch.cuda.get_device_name() if cuda else "cpu",
                  "nodes": len(set(hosts)), "allreduce": sweep, "gemm_n": n, "gemm_dtype": "bf16" if cuda else "fp32",
                  "gemm_tflops": [round(t, 1) for t in tflops], "gemm_stragglers": [hosts[r] + f" rank {r}" for r in slow_gemm],
                  "per_node": per_node, "host_names": host_names, "wall_s": round(wall, 2)}
        runfolder.write_json(args.out, result)
        if args.plot:
            plot(sweep, args.plot, world)
        print(f"probe: done in {wall:.1f} s -> {args.out}", flush=True)
    return finish()


def plot(sweep, path, world):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("probe: matplotlib not installed; no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([s["bytes"] for s in sweep], [s["busbw_gbs"] for s in sweep], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("all_reduce bus bandwidth (GB/s)")
    ax.set_title(f"probe, {world} ranks")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
