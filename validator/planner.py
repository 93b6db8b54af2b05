"""The parallel plan and a per-GPU memory estimate for a preset at N nodes.

`plan()` mirrors scripts/plan.sh line for line (tests/test_planner.py runs both for N = 1..64).
`estimate_memory()` is DERIVED, not yet calibrated on a GPU: weights, gradients and optimizer
state follow Megatron's mixed-precision layout; activations follow Korthikanti et al. (2022),
"Reducing Activation Recomputation in Large Transformer Models", per layer
s*b*h*(34 + 5*a*s/h) bytes without recompute, 34*s*b*h with selective recompute or flash
attention (no s*s scores stored), 2*s*b*h with full recompute, divided by TP with sequence
parallelism.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 2**30
# CUDA context, NCCL buffers and allocator slack: a fixed allowance (not calibrated yet).
FIXED_ALLOWANCE_GIB = 3.0
# Fraction of GPU memory a plan may use; the rest is headroom for fragmentation and other sites' GPUs.
HEADROOM_FRACTION = 0.85


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
    activations_gib: float
    logits_gib: float
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
    grads = 4 * shard  # fp32 main gradients
    optimizer = 12 * shard / p.dp  # fp32 master, Adam m and v, sharded by the distributed optimizer
    s, b, h, a = model["seq_length"], model["micro_batch_size"], model["hidden_size"], model["num_attention_heads"]
    if model["recompute"] == "full":
        per_layer = 2 * s * b * h
    elif model["recompute"] == "selective" or model["attention"] == "flash":
        per_layer = 34 * s * b * h
    else:
        per_layer = s * b * h * (34 + 5 * a * s / h)
    layers_here = model["num_layers"] / p.pp
    activations = per_layer * layers_here / p.tp
    logits = 2 * 4 * s * b * model["vocab_size"] / p.tp  # fp32 logits and their gradient
    total = (weights + grads + optimizer + activations + logits) / GIB + FIXED_ALLOWANCE_GIB
    budget = manifest["topology"]["gpu"]["memory_gib"] * HEADROOM_FRACTION
    return Memory(params, weights / GIB, grads / GIB, optimizer / GIB, activations / GIB, logits / GIB,
                  FIXED_ALLOWANCE_GIB, total, budget)


def as_dict(p: Plan, mem: Memory | None) -> dict:
    out = {"plan": asdict(p)}
    if mem is not None:
        out["memory_gib"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(mem).items()}
        out["memory_gib"]["fits"] = mem.fits
    return out
