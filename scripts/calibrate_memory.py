"""Measure the per-GPU memory of real Megatron-Core GPT training steps next to validator/planner.py's estimate.

Runs on any CUDA machine with megatron-core installed (pip install megatron-core; it needs torch,
numpy, packaging). One process, one GPU (TP=PP=DP=1): Megatron's DistributedDataParallel with fp32
gradient buffers and its distributed optimizer (Adam), bf16 weights, the local layer spec (no
Transformer Engine: unfused attention, which stores the s x s scores). For each configuration it
runs a few real training steps on random tokens and records torch.cuda.max_memory_allocated() and
max_memory_reserved().

    python3 scripts/calibrate_memory.py --out docs/memory-calibration.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from validator.planner import GIB, estimate_memory, plan  # noqa: E402

# name, layers, hidden, ffn, heads, query groups, seq, micro batch
CONFIGS = [
    ("gpt-125m-s2048-b8", 12, 768, 3072, 12, 12, 2048, 8),
    ("gpt-350m-s2048-b4", 24, 1024, 4096, 16, 16, 2048, 4),
    ("gpt-1.6b-s2048-b4", 24, 2048, 8192, 16, 8, 2048, 4),
    ("gpt-1.6b-s4096-b2", 24, 2048, 8192, 16, 8, 4096, 2),
    ("gpt-2.9b-s2048-b2", 32, 2560, 10240, 20, 4, 2048, 2),
    ("gpt-3.6b-s2048-b1", 16, 4096, 14336, 32, 8, 2048, 1),
    ("gpt-1.6b-s2048-b8", 24, 2048, 8192, 16, 8, 2048, 8),
]
# Shapes not used to fit the coefficients: the check that the estimate holds beyond its fit.
HELD_OUT = [
    ("gpt-760m-s1024-b16", 24, 1536, 6144, 16, 4, 1024, 16),
    ("gpt-1.2b-s3072-b2", 20, 2048, 5632, 32, 8, 3072, 2),
    ("gpt-2.2b-s2048-b2", 28, 2560, 6912, 20, 20, 2048, 2),
    ("gpt-3.4b-s1024-b1", 16, 4096, 11008, 32, 32, 1024, 1),
    ("gpt-400m-s4096-b2", 16, 1280, 5120, 10, 2, 4096, 2),
]
VOCAB = 32000


def manifest_for(layers, hidden, ffn, heads, groups, seq, micro, gpu_gib):
    return {
        "topology": {"gpu": {"memory_gib": gpu_gib, "per_node": 1}},
        "model": {"num_layers": layers, "hidden_size": hidden, "ffn_hidden_size": ffn,
                  "num_attention_heads": heads, "num_query_groups": groups, "seq_length": seq,
                  "vocab_size": VOCAB, "micro_batch_size": micro, "grad_accum_steps": 1,
                  "attention": "unfused", "recompute": "none", "optimizer": "torch"},
        "parallelism": {"tensor": 1, "pipeline": 1},
    }


def measure(layers, hidden, ffn, heads, groups, seq, micro, steps):
    import torch.nn.functional as F
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = TransformerConfig(
        num_layers=layers, hidden_size=hidden, ffn_hidden_size=ffn, num_attention_heads=heads,
        num_query_groups=groups, gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        normalization="RMSNorm", bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16)
    model = GPTModel(config=config, transformer_layer_spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
                     vocab_size=VOCAB, max_sequence_length=seq, position_embedding_type="rope",
                     share_embeddings_and_output_weights=False).cuda()
    params = sum(p.numel() for p in model.parameters())
    ddp_config = DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True)
    model = DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)
    optimizer = get_megatron_optimizer(
        OptimizerConfig(optimizer="adam", lr=1e-4, bf16=True, use_distributed_optimizer=True), [model])
    tokens = torch.randint(0, VOCAB, (micro, seq), device="cuda")
    position_ids = torch.arange(seq, device="cuda").unsqueeze(0).expand(micro, -1)
    mask = torch.triu(torch.ones(1, 1, seq, seq, device="cuda", dtype=torch.bool), diagonal=1)
    losses, times = [], []
    for _ in range(steps):
        start = time.perf_counter()
        model.zero_grad_buffer()
        optimizer.zero_grad()
        loss = model(tokens, position_ids, mask, labels=tokens).float().mean()
        loss.backward()
        model.finish_grad_sync()
        optimizer.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    result = {"params": params, "max_allocated_gib": torch.cuda.max_memory_allocated() / GIB,
              "max_reserved_gib": torch.cuda.max_memory_reserved() / GIB,
              "losses": losses, "step_s": times}
    del model, optimizer, tokens, mask
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--held-out", action="store_true", help="measure the held-out shapes instead")
    args = parser.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(0)
    gpu_gib = torch.cuda.get_device_properties(0).total_memory / GIB
    rows = []
    for name, *shape in (HELD_OUT if args.held_out else CONFIGS):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        manifest = manifest_for(*shape, gpu_gib)
        est = estimate_memory(manifest, plan(1, 1, shape[3], shape[4], shape[6], 1, 1, 1))
        row = {"name": name, "layers": shape[0], "hidden": shape[1], "ffn": shape[2], "heads": shape[3],
               "query_groups": shape[4], "seq": shape[5], "micro_batch": shape[6],
               "estimate_gib": round(est.allocated_gib, 2), "estimate_params": est.params_total,
               "estimate_terms_gib": {"weights": round(est.weights_gib, 2), "grads": round(est.grads_gib, 2),
                                      "optimizer": round(est.optimizer_gib, 2),
                                      "activations": round(est.activations_gib, 2),
                                      "logits": round(est.logits_gib, 2), "other": round(est.other_gib, 2),
                                      "step_peak": round(est.step_peak_gib, 2)}}
        try:
            row.update(measure(*shape, steps=args.steps))
            row["error_pct"] = round(100 * (row["estimate_gib"] - row["max_allocated_gib"]) / row["max_allocated_gib"], 1)
        except torch.cuda.OutOfMemoryError as exc:
            row["oom"] = str(exc).splitlines()[0]
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("losses", "step_s", "estimate_terms_gib")}),
              flush=True)
    payload = {"device": torch.cuda.get_device_name(0), "gpu_gib": round(gpu_gib, 1), "torch": torch.__version__,
               "megatron_core": __import__("megatron.core", fromlist=["__version__"]).__version__, "rows": rows}
    Path(args.out).write_text(json.dumps(payload, indent=1))
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
