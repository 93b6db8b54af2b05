"""Functional-mode stand-in for Megatron: a real data-parallel training loop on CPU with gloo.

A few steps of a tiny regression model whose gradients are all-reduced across every rank, as in
data-parallel training. Started by torchrun (RANK, WORLD_SIZE, MASTER_ADDR come from it). Each rank
writes what it saw; rank 0 also prints Megatron-style iteration lines that the verdict reads.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist

from smoke.dist_exit import finish


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # every rank starts from the same weights, as DDP would broadcast
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    target = torch.nn.Linear(16, 1)
    generator = torch.Generator().manual_seed(1000 + rank)  # each rank its own data shard
    losses = []
    for step in range(1, args.steps + 1):
        start = time.perf_counter()
        x = torch.randn(64, 16, generator=generator)
        with torch.no_grad():
            y = target(x)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():  # the data-parallel gradient all-reduce
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss = mean_loss.item() / world
        losses.append(mean_loss)
        if rank == 0:
            ms = (time.perf_counter() - start) * 1000
            print(f" [functional] iteration {step:8d}/{args.steps:8d} | elapsed time per iteration (ms): {ms:.1f} "
                  f"| lm loss: {mean_loss:.6E} |", flush=True)
    os.makedirs(args.out, exist_ok=True)
    report = {"rank": rank, "world_size": world, "local_rank": int(os.environ["LOCAL_RANK"]),
              "host": socket.gethostname(), "slurm_nodeid": os.environ.get("SLURM_NODEID"),
              "losses": losses,
              # names only: lets a test prove the login node's environment stayed out
              "environ_keys": sorted(os.environ)}
    # Written aside and renamed: a rank killed mid-write leaves no truncated rank-N.json.
    path = os.path.join(args.out, f"rank-{rank}.json")
    with open(f"{path}.{os.getpid()}.tmp", "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    os.replace(f"{path}.{os.getpid()}.tmp", path)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
