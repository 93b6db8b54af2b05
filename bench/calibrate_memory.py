"""Measure the per-GPU memory of real Megatron-Core GPT training steps, phase by phase.

Runs on any CUDA machine with megatron-core installed (pip install megatron-core; it needs torch,
numpy, packaging). One process, one GPU (TP=PP=DP=1), bf16 weights (every parameter, norms included,
as pretrain_gpt.py's Float16Module casts them), softmax in bf16 (pretrain_gpt.py's default), Megatron's
DistributedDataParallel with fp32 gradient buffers and its distributed optimizer, the local layer
spec (no Transformer Engine). The estimate is calibrated on pretrain_gpt.py itself
(bench/pretrain_gpt/, docs/memory-calibration.md); the rows this script recorded before it cast the
norms to bf16 are kept there as a record. Each configuration picks:

- attention: `unfused` (Megatron's DotProductAttention, which stores the s x s scores), `flash`
  (torch's scaled_dot_product_attention forced onto its flash kernel, a stand-in for Transformer
  Engine's flash attention, which needs TE) or `fused` (the same forced onto cuDNN's fused
  attention, what TE's FusedAttention runs on Hopper);
- optimizer: `torch` (torch's foreach AdamW, what Megatron falls back to without TE or apex) or
  `fused` (torch's fused AdamW, a stand-in for TE/apex FusedAdam: both update in place);
- recompute: `none`, `selective` (core attention) or `full` (every layer, uniform, 1 per unit).

For each configuration it runs a few real training steps on random tokens and records, from the
last steps, torch.cuda.memory_allocated() between phases and the peak of each phase:
static (weights, gradient buffer, optimizer state, persistent buffers), after the forward pass,
the peak of forward+backward, and the peak of the optimizer step; plus max_memory_allocated() and
max_memory_reserved() over the whole run. validator/planner.py's estimate is stored beside them.

    python3 bench/calibrate_memory.py --set fit --jobs 4 --out fit.json
    python3 bench/calibrate_memory.py --set held-out --out held.json

Every configuration runs in a process of its own (Megatron keeps references that would leave one
configuration's memory allocated in the next). With --jobs > 1 the processes share the GPU: the
allocator figures stay per process, but "outside_allocator" then counts the others too; measure
that one with --jobs 1.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from validator.memory_fit import manifest_for, preset_rows
from validator.planner import GIB, estimate_memory, plan

@dataclass
class Config:
    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    groups: int
    seq: int
    micro: int
    attention: str = "unfused"
    optimizer: str = "torch"
    recompute: str = "none"
    vocab: int = 32000


def _grid() -> list[Config]:
    """Small models that move one dimension at a time, at 2 and 4 layers, so that each term's
    coefficient (per layer and once per model) can be separated."""
    shapes = [
        # name, hidden, ffn, heads, groups, seq, micro
        ("base", 1024, 4096, 16, 16, 2048, 2),
        ("seq1024", 1024, 4096, 16, 16, 1024, 2),
        ("seq4096", 1024, 4096, 16, 16, 4096, 2),
        ("micro4", 1024, 4096, 16, 16, 2048, 4),
        ("heads8", 1024, 4096, 8, 8, 2048, 2),
        ("gqa4", 1024, 4096, 16, 4, 2048, 2),
        ("ffn8192", 1024, 8192, 16, 16, 2048, 2),
        ("h2048", 2048, 5632, 16, 16, 2048, 2),
    ]
    grid = []
    for attention in ("unfused", "flash"):
        for layers in (2, 4):
            for name, h, f, a, g, s, b in shapes:
                grid.append(Config(f"{name}-L{layers}-{attention}", layers, h, f, a, g, s, b, attention))
    for recompute in ("selective", "full"):
        for layers in (2, 4):
            grid.append(Config(f"base-L{layers}-unfused-{recompute}", layers, 1024, 4096, 16, 16, 2048, 2,
                               "unfused", "torch", recompute))
    # the optimizer step: parameters from the layers, not the embeddings
    for optimizer in ("torch", "fused"):
        grid.append(Config(f"opt-1.6b-{optimizer}", 24, 2048, 8192, 16, 8, 512, 1, "flash", optimizer))
        grid.append(Config(f"opt-3.5b-{optimizer}", 16, 4096, 11008, 32, 32, 512, 1, "flash", optimizer))
    return grid


FIT = _grid()
# Full-size shapes never used to fit a coefficient, several near the 140 GiB of an H200.
HELD_OUT = [
    Config("gpt-1.1b-s4096-b2", 16, 2048, 5632, 16, 4, 4096, 2, "unfused", "torch"),
    Config("gpt-2.7b-s2048-b4", 32, 2560, 6912, 32, 8, 2048, 4, "flash", "fused"),
    Config("gpt-6.7b-s2048-b1", 32, 4096, 11008, 32, 8, 2048, 1, "flash", "fused"),
    Config("gpt-700m-s8192-b4", 24, 1536, 4096, 12, 4, 8192, 4, "flash", "fused"),
    Config("gpt-300m-s2048-b32", 24, 1024, 2816, 16, 16, 2048, 32, "flash", "torch"),
    Config("gpt-1.3b-s2048-b6", 24, 2048, 5504, 16, 16, 2048, 6, "unfused", "fused"),
    Config("gpt-3.7b-s1024-b2", 16, 4096, 14336, 32, 8, 1024, 2, "unfused", "torch"),
    Config("gpt-1.6b-s4096-b4-full", 24, 2048, 8192, 16, 8, 4096, 4, "unfused", "fused", "full"),
    Config("gpt-1.6b-s4096-b2-sel", 24, 2048, 8192, 16, 8, 4096, 2, "unfused", "fused", "selective"),
    Config("gpt-8.4b-s2048-b1", 40, 4096, 11008, 32, 8, 2048, 1, "flash", "fused"),
    Config("gpt-1.3b-s2048-b4", 24, 2048, 5504, 16, 16, 2048, 4, "unfused", "fused"),
    # the two shapes the first estimator missed (docs/memory-calibration.md)
    Config("gpt-3.4b-s1024-b1", 16, 4096, 11008, 32, 32, 1024, 1, "unfused", "torch"),
    Config("gpt-400m-s4096-b2", 16, 1280, 5120, 10, 2, 4096, 2, "unfused", "torch"),
    # measured after the estimator was rewritten from the phase-by-phase fit: other vocabularies,
    # recompute with flash attention, shapes placed near the limit by the new estimate
    Config("gpt-3.6b-v128k-s4096-b2-sel", 28, 3072, 8192, 24, 8, 4096, 2, "flash", "fused", "selective", 128256),
    Config("gpt-7.0b-s2048-b1-sel", 38, 4096, 11008, 32, 8, 2048, 1, "flash", "fused", "selective"),
    Config("gpt-5.3b-s2048-b2", 28, 4096, 11008, 32, 8, 2048, 2, "flash", "torch"),
    Config("gpt-1.3b-v50k-s2048-b12-sel", 16, 2048, 8192, 16, 16, 2048, 12, "unfused", "fused", "selective", 50304),
    Config("gpt-3.7b-v50k-s4096-b6-full", 36, 2560, 10240, 20, 4, 4096, 6, "flash", "fused", "full", 50304),
    Config("gpt-8.0b-v128k-s4096-b1-sel", 32, 4096, 14336, 32, 8, 4096, 1, "flash", "fused", "selective", 128256),
]


# The presets' own models (presets/*/preset.yaml) at TP = PP = DP = 1, from the manifests.
PRESETS = [Config(**row) for row in preset_rows(Path(__file__).resolve().parents[1])]
SETS = {"fit": FIT, "held-out": HELD_OUT, "presets": PRESETS}


def sdpa_core_attention(backend: str):
    """A Megatron core-attention module that runs torch's scaled_dot_product_attention on one kernel:
    `flash` (a stand-in for TE's flash attention) or `fused` (cuDNN's fused attention, what TE's
    FusedAttention runs on Hopper). Both keep O(s) per head, never the s x s scores."""
    from megatron.core.transformer.module import MegatronModule
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kernel = {"flash": SDPBackend.FLASH_ATTENTION, "fused": SDPBackend.CUDNN_ATTENTION}[backend]

    class SdpaCoreAttention(MegatronModule):
        def __init__(self, config, layer_number, attn_mask_type, attention_type, **kwargs):
            super().__init__(config=config)
            self.dropout = config.attention_dropout

        def forward(self, query, key, value, attention_mask, attn_mask_type=None, attention_bias=None,
                    packed_seq_params=None):
            sq, b, heads, dim = query.shape
            q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))  # [b, heads, s, dim]
            if k.shape[1] != heads and kernel == SDPBackend.CUDNN_ATTENTION:  # cuDNN's SDPA takes no GQA flag
                k, v = (t.repeat_interleave(heads // k.shape[1], dim=1) for t in (k, v))
            with sdpa_kernel(kernel):
                out = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True,
                    enable_gqa=k.shape[1] != heads)
            return out.permute(2, 0, 1, 3).reshape(sq, b, heads * dim)

    return SdpaCoreAttention


class _FusedAdamW(torch.optim.AdamW):
    def __init__(self, *args, **kwargs):
        kwargs["fused"] = True
        super().__init__(*args, **kwargs)


def measure(c: Config, steps: int) -> dict:
    import torch.nn.functional as F
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.transformer.transformer_config import TransformerConfig

    recompute = {}
    if c.recompute == "full":
        recompute = {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}
    elif c.recompute == "selective":
        recompute = {"recompute_granularity": "selective"}
    config = TransformerConfig(
        num_layers=c.layers, hidden_size=c.hidden, ffn_hidden_size=c.ffn, num_attention_heads=c.heads,
        num_query_groups=c.groups, gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        normalization="RMSNorm", bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        attention_softmax_in_fp32=False,  # pretrain_gpt.py's default (--attention-softmax-in-fp32 not given)
        **recompute)
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    if c.attention in ("flash", "fused"):
        spec.submodules.self_attention.submodules.core_attention = sdpa_core_attention(c.attention)
    model = GPTModel(config=config, transformer_layer_spec=spec, vocab_size=c.vocab, max_sequence_length=c.seq,
                     position_embedding_type="rope", share_embeddings_and_output_weights=False).cuda()
    # pretrain_gpt.py wraps the model in Float16Module, which casts every parameter to bf16; torch's
    # RMSNorm (local layers, no Apex) is created in fp32 and would otherwise keep fp32 activations.
    model = model.to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    ddp_config = DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True)
    model = DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)
    torch_adamw = torch.optim.AdamW
    if c.optimizer == "fused":
        torch.optim.AdamW = _FusedAdamW
    try:
        optimizer = get_megatron_optimizer(
            OptimizerConfig(optimizer="adam", lr=1e-4, bf16=True, use_distributed_optimizer=True), [model])
    finally:
        torch.optim.AdamW = torch_adamw
    tokens = torch.randint(0, c.vocab, (c.micro, c.seq), device="cuda")
    position_ids = torch.arange(c.seq, device="cuda").unsqueeze(0).expand(c.micro, -1)
    mask = torch.triu(torch.ones(1, 1, c.seq, c.seq, device="cuda", dtype=torch.bool), diagonal=1)
    allocated, peak = torch.cuda.memory_allocated, torch.cuda.max_memory_allocated
    phases: dict[str, int] = {}
    losses, times = [], []
    for step in range(steps):
        start = time.perf_counter()
        model.zero_grad_buffer()
        optimizer.zero_grad()
        static = allocated()
        torch.cuda.reset_peak_memory_stats()
        output = model(tokens, position_ids, mask, labels=tokens)
        loss = output.float().mean()
        after_forward = allocated()
        loss.backward()
        peak_backward = peak()
        losses.append(loss.item())
        del output, loss
        torch.cuda.reset_peak_memory_stats()
        model.finish_grad_sync()
        optimizer.step()
        peak_step = peak()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        if step >= 1:  # step 0 creates the optimizer state and the persistent buffers
            for key, value in (("static", static), ("after_forward", after_forward),
                               ("peak_backward", peak_backward), ("peak_step", peak_step)):
                phases[key] = max(phases.get(key, 0), value)
    # what the device holds beyond torch's reserved pool: CUDA context, cuBLAS and NCCL workspaces
    free, total = torch.cuda.mem_get_info()
    phases["outside_allocator"] = total - free - torch.cuda.memory_reserved()
    result = {"params": params, "bytes": phases,
              "max_allocated_gib": max(phases["peak_backward"], phases["peak_step"]) / GIB,
              "max_reserved_gib": torch.cuda.max_memory_reserved() / GIB,
              "losses": losses, "step_s": times}
    del model, optimizer, tokens, mask
    return result


def run_one(c: Config, steps: int) -> dict:
    """One configuration in this process (a fresh one: Megatron keeps references that a failed or
    finished model would otherwise leave allocated for the next configuration)."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(0)
    gpu_gib = torch.cuda.get_device_properties(0).total_memory / GIB
    row = asdict(c)
    est = estimate_memory(manifest_for(asdict(c), gpu_gib), plan(1, 1, c.heads, c.groups, c.micro, 1, 1, 1), pad_vocab=False)
    row["estimate_gib"] = round(est.allocated_gib, 3)
    try:
        row.update(measure(c, steps))
        row["error_pct"] = round(100 * (row["estimate_gib"] - row["max_allocated_gib"]) / row["max_allocated_gib"], 1)
    except torch.cuda.OutOfMemoryError as exc:
        row["oom"] = str(exc).splitlines()[0]
    torch.distributed.destroy_process_group()
    return row


def run_isolated(c: Config, steps: int, port: int) -> dict:
    env = dict(os.environ, MASTER_PORT=str(port))
    proc = subprocess.run([sys.executable, __file__, "--one", json.dumps(asdict(c)), "--steps", str(steps)],
                          capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        return {**asdict(c), "failed": proc.stderr.strip().splitlines()[-3:]}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--set", choices=tuple(SETS), default="fit")
    parser.add_argument("--only", help="run only the configurations whose name contains one of these (comma-separated)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="configurations measured at once (each its own process; small ones only)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(Config(**json.loads(args.one)), args.steps)), flush=True)
        return 0
    if not args.out:
        parser.error("--out is required")
    configs = [c for c in SETS[args.set] if not args.only or any(part in c.name for part in args.only.split(","))]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_isolated, c, args.steps, 29517 + i) for i, c in enumerate(configs)]
        rows = []
        for future in futures:
            rows.append(future.result())
            print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("losses", "step_s")}), flush=True)
    payload = {"device": torch.cuda.get_device_name(0), "gpu_gib": round(torch.cuda.get_device_properties(0).total_memory / GIB, 1),
               "torch": torch.__version__,
               "megatron_core": __import__("megatron.core", fromlist=["__version__"]).__version__,
               "set": args.set, "steps": args.steps, "rows": rows}
    Path(args.out).write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
