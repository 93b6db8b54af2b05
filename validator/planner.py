"""The parallel plan and a per-GPU memory estimate for a preset at N nodes.

`plan()` mirrors scripts/plan.sh line for line (tests/test_planner.py runs both for N = 1..64).

`estimate_memory()`: what is MEASURED and what is DERIVED (docs/memory-calibration.md has the table;
scripts/calibrate_memory.py re-measures on any CUDA machine):
- derived from the layer structure (Korthikanti et al. 2022, adapted to SwiGLU, RMSNorm and GQA
  with K/V expanded to all heads): 18*s*b*h + 6*s*b*ffn bytes of saved activations per layer;
- measured on an H200 (megatron-core 0.19.2, local layer spec, unfused attention): 8*a*s^2*b bytes
  per layer for the attention scores (theory says 7: fp32 softmax output, dropout mask and
  output), 8*s*b*V bytes for the logits and their fp32 loss, 24 bytes per parameter at the end of
  the backward pass (bf16 weights 2, fp32 gradient buffer 4, fp32 master weights and Adam 12, and 6
  more: bf16 gradients in flight and allocator rounding), and 37 bytes per parameter at the peak
  of torch's AdamW step (its foreach temporaries);
- derived, not measured here (Transformer Engine does not run on the lent GPU): flash attention and
  selective recompute drop the s^2 term; a fused Adam (TE/apex, what the container runs) updates in
  place, so its step peak is taken as the backward-pass static bytes without activations.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 2**30
# Not in torch's allocator statistics: CUDA context and NCCL buffers (derived allowance).
FIXED_ALLOWANCE_GIB = 3.0
# Fraction of GPU memory a plan may use; the rest is headroom for fragmentation and other sites' GPUs.
HEADROOM_FRACTION = 0.85
# Measured coefficients (see the module docstring and docs/memory-calibration.md).
SCORES_BYTES = 8  # per a*s^2*b, per layer, unfused attention without recompute
LOGITS_BYTES = 8  # per s*b*V
OTHER_BYTES_PER_PARAM = 6  # bf16 gradients in flight and allocator rounding, beyond 2 + 4 + 12
TORCH_ADAMW_STEP_BYTES_PER_PARAM = 37


@dataclass
class Plan:
    nodes: int
    gpus_per_node: int
    world: int
    tp: int = 0
    pp: int = 0
    dp: int = 0
    global_batch: int = 0
    error: str = ""


def plan(gpus: int, nodes: int, heads: int, groups: int, micro_batch: int, grad_accum: int,
         tensor: str | int, pipeline: int) -> Plan:
    p = Plan(nodes=nodes, gpus_per_node=gpus, world=gpus * nodes, pp=pipeline)
    if tensor == "auto":
        p.tp = 1
        for t in range(gpus, 0, -1):
            if heads % t == 0 and (groups % t == 0 or t % groups == 0):
                p.tp = t
                break
    else:
        p.tp = int(tensor)
    if heads % p.tp:
        p.error = f"tensor parallel {p.tp} does not divide {heads} attention heads"
    elif groups % p.tp and p.tp % groups:
        p.error = f"tensor parallel {p.tp} is neither a multiple nor a divisor of {groups} query groups"
    elif p.tp > gpus:
        p.error = f"tensor parallel {p.tp} is larger than the {gpus} GPUs of a node"
    elif p.world % (p.tp * p.pp):
        p.error = f"world size {p.world} is not divisible by TP x PP = {p.tp * p.pp}"
    if p.error:
        return p
    p.dp = p.world // (p.tp * p.pp)
    p.global_batch = micro_batch * p.dp * grad_accum
    return p


def plan_for(manifest: dict, nodes: int, gpus: int | None = None) -> Plan:
    m, par = manifest["model"], manifest["parallelism"]
    return plan(gpus or manifest["topology"]["gpu"]["per_node"], nodes, m["num_attention_heads"],
                m["num_query_groups"], m["micro_batch_size"], m["grad_accum_steps"],
                par["tensor"], par["pipeline"])


def parameter_count(model: dict) -> int:
    h, a, g = model["hidden_size"], model["num_attention_heads"], model["num_query_groups"]
    kv = g * (h // a)
    per_layer = h * h + 2 * h * kv + h * h + 3 * h * model["ffn_hidden_size"] + 2 * h
    embeddings = 2 * model["vocab_size"] * h  # untied input and output embeddings
    return model["num_layers"] * per_layer + embeddings + h


@dataclass
class Memory:
    params_total: int
    weights_gib: float
    grads_gib: float
    optimizer_gib: float
    other_gib: float
    activations_gib: float
    logits_gib: float
    step_peak_gib: float
    allocated_gib: float  # what torch.cuda.max_memory_allocated() should read
    fixed_gib: float
    total_gib: float
    budget_gib: float

    @property
    def fits(self) -> bool:
        return self.total_gib <= self.budget_gib


def estimate_memory(manifest: dict, p: Plan) -> Memory:
    model = manifest["model"]
    params = parameter_count(model)
    shard = params / (p.tp * p.pp)
    weights = 2 * shard  # bf16
    grads = 4 * shard  # fp32 gradient buffer
    optimizer = 12 * shard / p.dp  # fp32 master weights, Adam m and v, sharded by the distributed optimizer
    other = OTHER_BYTES_PER_PARAM * shard
    s, b, h, a = model["seq_length"], model["micro_batch_size"], model["hidden_size"], model["num_attention_heads"]
    ffn = model["ffn_hidden_size"]
    full_layer = 18 * s * b * h + 6 * s * b * ffn
    scores = SCORES_BYTES * a * s * s * b
    layers_here = model["num_layers"] / p.pp
    if model["recompute"] == "full":
        activations = (2 * s * b * h * layers_here + full_layer + scores) / p.tp  # layer inputs + one layer redone
    elif model["recompute"] == "selective" or model["attention"] == "flash":
        activations = full_layer * layers_here / p.tp
    else:
        activations = (full_layer + scores) * layers_here / p.tp
    logits = LOGITS_BYTES * s * b * model["vocab_size"] / p.tp
    backward_peak = weights + grads + optimizer + other + activations + logits
    if model.get("optimizer", "fused") == "torch":
        # measured at DP=1: 12 bytes of weights/gradients/other stay, the rest is optimizer state and
        # temporaries, which the distributed optimizer shards over DP (derived for DP > 1)
        per_param_optimizer = TORCH_ADAMW_STEP_BYTES_PER_PARAM - (2 + 4 + OTHER_BYTES_PER_PARAM)
        step_peak = weights + grads + other + per_param_optimizer * shard / p.dp
    else:
        step_peak = weights + grads + optimizer + other
    allocated = max(backward_peak, step_peak) / GIB
    total = allocated + FIXED_ALLOWANCE_GIB
    budget = manifest["topology"]["gpu"]["memory_gib"] * HEADROOM_FRACTION
    return Memory(params, weights / GIB, grads / GIB, optimizer / GIB, other / GIB, activations / GIB,
                  logits / GIB, step_peak / GIB, allocated, FIXED_ALLOWANCE_GIB, total, budget)


def as_dict(p: Plan, mem: Memory | None) -> dict:
    out = {"plan": asdict(p)}
    if mem is not None:
        out["memory_gib"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(mem).items()}
        out["memory_gib"]["fits"] = mem.fits
    return out
