"""Functional-mode stand-in for Megatron: a real data-parallel training loop on CPU with gloo.

A few steps of a tiny regression model whose gradients are all-reduced across every rank, as in
data-parallel training. Started by torchrun (RANK, WORLD_SIZE, MASTER_ADDR come from it). Each rank
writes what it saw; rank 0 also prints Megatron-style iteration lines that the verdict reads.

With --megatron-data (megatron-node passes it when the image carries Megatron's source, as the local
cluster's Megatron stand-in image does), every rank first prepares its data as pretrain_gpt.py
does with --mock-data: global rank 0 builds the dataset helpers (Megatron's _compile_dependencies),
then every rank builds the mock GPT dataset through megatron.core.datasets'
BlendedMegatronDatasetBuilder, which imports the compiled helpers on every rank (finding 2 of
docs/preset-stack-review.md). The loop then trains on those samples' tokens.
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
from smoke.watchdog.beat import beat


class MockTokenizer:
    """What MockGPTDataset reads of a tokenizer (eod, pad, a vocabulary size): Megatron's
    NullTokenizer lives in megatron.training, which megatron-core does not carry."""
    eod = 0
    pad = 0
    vocab_size = 1024
    unique_identifiers = {"class": "MockTokenizer"}


def megatron_tokens(rank: int, samples: int, seq: int = 64) -> torch.Tensor:
    """Token ids from Megatron's own mock GPT dataset, built as pretrain_gpt.py builds it."""
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig, MockGPTDataset
    from megatron.core.datasets.utils import compile_helpers
    if rank == 0:  # as Megatron's initialize: global rank 0 only, into the source tree of its node
        compile_helpers()
    dist.barrier()
    config = GPTDatasetConfig(random_seed=1234, sequence_length=seq, blend=None, blend_per_split=None,
                              split="99,1,0", tokenizer=MockTokenizer(), reset_position_ids=False,
                              reset_attention_mask=False, eod_mask_loss=False)
    train, _, _ = BlendedMegatronDatasetBuilder(MockGPTDataset, [samples, 1, 0], lambda: True, config).build()
    return torch.stack([torch.as_tensor(train[i]["tokens"][:16]) for i in range(samples)]).float()


def install_test_faults() -> None:
    """TEST DOUBLE (SMOKE_TEST_FAULTS=1, the hang matrix only): SIGUSR2 makes this rank spin in its
    own code, outside any collective, until it is killed: a rank stuck in a data loader or a loop of
    its own, which the watchdog must tell from the peers that wait for it."""
    import signal

    def spin(*_):
        while True:
            sum(range(1000))
    signal.signal(signal.SIGUSR2, spin)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", required=True)
    parser.add_argument("--megatron-data", action="store_true", help="train on Megatron's mock GPT dataset")
    args = parser.parse_args()
    # A step's least duration in ms (SMOKE_FUNCTIONAL_STEP_MS): the loop stands in for a model whose
    # steps take time, so that a fault can land during training (the hang matrix); 0 by default.
    pace = int(os.environ.get("SMOKE_FUNCTIONAL_STEP_MS", "0") or 0) / 1000
    if os.environ.get("SMOKE_TEST_FAULTS") == "1":
        install_test_faults()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # every rank starts from the same weights, as DDP would broadcast
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    target = torch.nn.Linear(16, 1)
    generator = torch.Generator().manual_seed(1000 + rank)  # each rank its own data shard
    tokens = megatron_tokens(rank, 64 * args.steps) if args.megatron_data else None
    losses = []
    for step in range(1, args.steps + 1):
        start = time.perf_counter()
        if tokens is None:
            x = torch.randn(64, 16, generator=generator)
        else:  # token ids scaled into the model's range: Megatron's samples, not random numbers
            x = tokens[(step - 1) * 64:step * 64] / MockTokenizer.vocab_size
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
        beat(step)
        if pace:
            time.sleep(max(0.0, pace - (time.perf_counter() - start)))
        if rank == 0:
            ms = (time.perf_counter() - start) * 1000
            print(f" [functional] iteration {step:8d}/{args.steps:8d} | elapsed time per iteration (ms): {ms:.1f} "
                  f"| lm loss: {mean_loss:.6E} |", flush=True)
    os.makedirs(args.out, exist_ok=True)
    report = {"rank": rank, "world_size": world, "local_rank": int(os.environ["LOCAL_RANK"]),
              "host": socket.gethostname(), "slurm_nodeid": os.environ.get("SLURM_NODEID"),
              "losses": losses, "megatron_data": tokens is not None,
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
