"""The torch program of localization's srun steps: one node's checks, or one group's all-reduce.

    torchrun-node -m smoke.localize.worker --kind node|group --out PATH
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from smoke import runfolder
from smoke.dist_exit import finish
from smoke.localize.stats import best
from smoke.slurm import node_name
from smoke.watchdog.beat import beat


def gpus_seen(cuda: bool) -> int:
    """GPUs this node's processes can see. Functional mode has none: when SMOKE_FAKE_GPU_DIR is set
    (the local test cluster; a test double), each GPU Slurm allocated (CUDA_VISIBLE_DEVICES) counts
    when its fake GRES device file <dir>/<host>/gpu<i> exists."""
    if cuda:
        return torch.cuda.device_count()
    allocated = int(os.environ.get("SLURM_GPUS_ON_NODE", "0") or 0)
    fake = os.environ.get("SMOKE_FAKE_GPU_DIR")
    if not fake:
        return allocated
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or ",".join(str(i) for i in range(allocated))
    folder = os.path.join(fake, node_name())
    return sum(1 for i in visible.split(",") if i and os.path.exists(os.path.join(folder, f"gpu{i}")))


def node_gemm(per_gpu: list[float], cuda: bool) -> float:
    """A node's GEMM figure: its slowest GPU. On CPU (functional mode) the median of its ranks:
    they share cores with every other "node", and one descheduled rank says nothing about it."""
    return min(per_gpu) if cuda else statistics.median(per_gpu)


def timed(fn, cuda: bool) -> float:
    if cuda:
        torch.cuda.synchronize()
    begin = time.perf_counter()
    fn()
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - begin


def gemm_repeats(cuda: bool, repeats: int) -> list[float]:
    # On CPU a repeat lasts about 40 ms, longer than a CFS quota period (a throttled node must not
    # finish a whole repeat inside one burst of its quota, as 4 x 256^3 = 1.5 ms did).
    n, iters = (8192, 10) if cuda else (512, 12)
    dtype, device = (torch.bfloat16, "cuda") if cuda else (torch.float32, "cpu")
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    torch.matmul(a, b)

    def run():
        for _ in range(iters):
            torch.matmul(a, b)
    out = []
    for _ in range(repeats):
        out.append(2 * n**3 * iters / timed(run, cuda) / 1e12)
        beat()  # progress for the hang watchdog (a no-op without it)
    return out


def allreduce_repeats(group, cuda: bool, repeats: int, size: int | None = None) -> list[float]:
    """Bus bandwidth (GB/s) of one all-reduce size (default 256 MiB on GPU, 1 MiB on CPU), the
    slowest rank's time, per repeat."""
    size = size or (256 * 2**20 if cuda else 2**20)
    world = dist.get_world_size(group)
    tensor = torch.ones(size // 4, dtype=torch.float32, device="cuda" if cuda else "cpu")
    iters = 5 if cuda else 2
    dist.all_reduce(tensor, group=group)
    out = []
    for _ in range(repeats):
        dist.barrier(group=group)

        def run():
            for _ in range(iters):
                dist.all_reduce(tensor, group=group)
        seconds = torch.tensor([timed(run, cuda) / iters], device=tensor.device, dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX, group=group)
        out.append(size / seconds.item() / 1e9 * 2 * (world - 1) / world)
        beat()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("node", "group"), required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    timeout = datetime.timedelta(seconds=float(os.environ.get("SMOKE_COLLECTIVE_TIMEOUT", "600")))
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timeout)
    beat()  # joined: from here on a rank that stops beating holds its step up
    repeats = 5 if cuda else 8
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.kind == "node":
        gemm = gemm_repeats(cuda, repeats)
        # on GPU at the probe's largest size: the preset's intra-node floor is a figure for that size
        size = int(os.environ.get("SMOKE_LOCALIZE_INTRA_BYTES") or 0) if cuda else None
        intra = allreduce_repeats(None, cuda, repeats, size) if world > 1 else []
        table = torch.tensor(gemm, dtype=torch.float64, device="cuda" if cuda else "cpu")
        rows = [torch.zeros_like(table) for _ in range(world)]
        dist.all_gather(rows, table)
        if rank == 0:
            per_gpu = [best(r.tolist()) for r in rows]
            report = {"host": node_name(), "gpus_allocated": int(os.environ.get("SLURM_GPUS_ON_NODE", world)),
                      "gpus_seen": gpus_seen(cuda), "ranks": world, "gemm_per_gpu": [round(t, 4) for t in per_gpu],
                      "gemm_tflops": node_gemm(per_gpu, cuda), "gemm_repeats": [r.tolist() for r in rows],
                      "intra_busbw_gbs": best(intra) if intra else None, "intra_repeats": intra}
            runfolder.write_json(os.path.join(args.out, f"{report['host']}.json"), report)
    else:
        figures = allreduce_repeats(None, cuda, repeats)
        if rank == 0:
            runfolder.write_json(args.out, {"ranks": world, "busbw_gbs": best(figures), "repeats": figures})
    return finish()


if __name__ == "__main__":
    sys.exit(main())
