"""The parallel plan and a per-GPU memory estimate for a preset at N nodes.

`plan()` mirrors scripts/plan.sh line for line (tests/test_planner.py runs both for N = 1..64).

`estimate_memory()` follows one training step phase by phase, as torch's allocator sees it:
static bytes (weights, gradient buffer, optimizer state), the activations saved by the forward
pass, the transient at the start of the backward pass, and the optimizer step's transient; the peak
is static plus the larger of the last two phases. docs/memory-calibration.md says which
coefficients were MEASURED (fitted by validator/memory_fit.py on an H200 with megatron-core
0.19.2, one GPU, rows in docs/calibration/h200-fit-set.json, checked on held-out shapes) and which
are DERIVED (everything that needs more than one GPU: TP, PP and DP scaling, sequence parallelism,
Transformer Engine's own kernels, for which torch's flash SDPA and fused AdamW stood in).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 2**30
# Not in torch's allocator statistics: CUDA context and NCCL buffers (derived allowance).
FIXED_ALLOWANCE_GIB = 3.0
# Fraction of GPU memory a plan may use; the rest is headroom for fragmentation and other sites' GPUs.
HEADROOM_FRACTION = 0.85

# Fitted coefficients, bytes per element (validator/memory_fit.py prints them from the fit file;
# tests/test_planner.py checks that these agree with it).
STATIC_BYTES_PER_PARAM = 18  # bf16 weights 2 + fp32 gradient buffer 4 + fp32 master weights and Adam 12
STATIC_OTHER_BYTES = 76e6  # RoPE cache and masks
SCORE_BUFFER_BYTES = 2.0  # Megatron's persistent bf16 score buffer, per a*s^2*b (unfused)
LAYER_SBH, LAYER_SBKV, LAYER_SBF = 28.3, 6.0, 10.0  # saved per layer, per s*b*h, s*b*kv, s*b*ffn
LAYER_SCORES = 7.0  # saved per layer, per a*s^2*b, unfused attention (fp32 softmax, dropout mask, bf16 probs)
ONCE_SBV, ONCE_SBH = 4.0, 11.0  # saved once per model: logits and loss, embedding output and final norm
BACKWARD_SBV, BACKWARD_SBH = 2.0, 2.0  # transient when the backward pass starts (logit gradients)
BACKWARD_SCORES = {"none": 9.0, "selective": 16.3}  # one unfused attention backward (and its recompute)
BACKWARD_FREED_SBV = 8.1  # what the loss's backward has freed by the time the first attention runs
STEP_BYTES_PER_PARAM = {"torch": 4.0, "fused": 0.16}  # foreach AdamW's sqrt temporary; fused updates in place


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
    other_gib: float  # persistent buffers: score buffer, RoPE cache
    activations_gib: float  # saved by the transformer layers
    logits_gib: float  # saved once per model: logits, loss, embedding output
    backward_gib: float  # transient at the start of the backward pass
    step_peak_gib: float  # static bytes plus the optimizer step's transient
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
    tp, pp, dp = p.tp, p.pp, p.dp
    shard = params / (tp * pp)
    s, b, h, a = model["seq_length"], model["micro_batch_size"], model["hidden_size"], model["num_attention_heads"]
    kv = model["num_query_groups"] * (h // a)
    sbh, sbkv, sbf = s * b * h, s * b * kv, s * b * model["ffn_hidden_size"]
    sbv, scores = s * b * model["vocab_size"], a * s * s * b
    unfused = model["attention"] == "unfused"  # flash attention never holds the s x s scores
    recompute = model["recompute"]

    weights, grads = 2 * shard, 4 * shard  # bf16 weights, fp32 gradient buffer
    optimizer = 12 * shard / dp  # fp32 master weights, Adam m and v: sharded by the distributed optimizer
    other = STATIC_OTHER_BYTES + (SCORE_BUFFER_BYTES * scores / tp if unfused else 0)
    static = weights + grads + optimizer + other

    # Activations are divided by TP: with sequence parallelism (megatron-node turns it on with TP > 1)
    # every saved tensor of a layer is split over the TP ranks. With pipelining, the first stage
    # holds min(PP, micro-batches) micro-batches in flight under 1F1B.
    layer_linear = (LAYER_SBH * sbh + LAYER_SBKV * sbkv + LAYER_SBF * sbf) / tp
    layer_scores = LAYER_SCORES * scores / tp if unfused else 0.0
    in_flight = min(pp, model["grad_accum_steps"]) if pp > 1 else 1
    layers_here = model["num_layers"] / pp
    if recompute == "full":  # only each layer's input is kept; one layer is redone in the backward pass
        activations = 2 * sbh / tp * layers_here * in_flight
        redone = layer_linear + layer_scores
    elif recompute == "selective":  # core attention recomputed: its scores are not kept
        activations = layer_linear * layers_here * in_flight
        redone = 0.0
    else:
        activations = (layer_linear + layer_scores) * layers_here * in_flight
        redone = 0.0
    once = (ONCE_SBV * sbv + ONCE_SBH * sbh) / tp
    attention_backward = 0.0
    if unfused:
        factor = BACKWARD_SCORES["selective" if recompute == "selective" else "none"]
        attention_backward = max(0.0, (factor * scores - BACKWARD_FREED_SBV * sbv) / tp)
    backward = (BACKWARD_SBV * sbv + BACKWARD_SBH * sbh) / tp + redone + attention_backward
    backward_peak = static + activations + once + backward
    step_peak = static + STEP_BYTES_PER_PARAM[model.get("optimizer", "fused")] * shard / dp
    allocated = max(backward_peak, step_peak) / GIB
    total = allocated + FIXED_ALLOWANCE_GIB
    budget = manifest["topology"]["gpu"]["memory_gib"] * HEADROOM_FRACTION
    return Memory(params, weights / GIB, grads / GIB, optimizer / GIB, other / GIB, activations / GIB,
                  once / GIB, backward / GIB, step_peak / GIB, allocated, FIXED_ALLOWANCE_GIB, total, budget)


def as_dict(p: Plan, mem: Memory | None) -> dict:
    out = {"plan": asdict(p)}
    if mem is not None:
        out["memory_gib"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(mem).items()}
        out["memory_gib"]["fits"] = mem.fits
    return out
