"""The parallel plan and a per-GPU memory estimate for a preset at N nodes.

`plan()` mirrors scripts/plan.sh line for line (tests/test_planner.py runs both for N = 1..64).

`estimate_memory()` follows one training step phase by phase, as torch's allocator sees it:
static bytes (weights, gradient buffer, optimizer state), the activations saved by the forward
pass, the transient at the start of the backward pass, and the optimizer step's transient; the peak
is static plus the larger of the last two phases. docs/memory-calibration.md says which
coefficients were MEASURED (fitted by validator/memory_fit.py on Megatron-LM core_v0.13.0's own
pretrain_gpt.py on an H200, one GPU, local layers, rows in docs/calibration/h200-pretrain-gpt-fit.json,
checked on held-out shapes) and which are DERIVED (everything that needs more than one GPU: TP, PP
and DP scaling, sequence parallelism, and Transformer Engine's own kernels: flash attention and fused Adam).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

GIB = 2**30
# Not in torch's allocator statistics: CUDA context and NCCL buffers (derived allowance).
FIXED_ALLOWANCE_GIB = 3.0
# Blocks torch's caching allocator keeps reserved beyond the allocated peak, per s*b*V (one fp32 copy of
# the logits): a micro-batch of 160 with full recompute ran out of memory with 43 GiB reserved but
# unallocated and 113 GiB estimated (docs/memory-calibration.md).
RESERVE_SBV = 4.0
# Fraction of GPU memory a plan may use; the rest is headroom for fragmentation and other sites' GPUs.
HEADROOM_FRACTION = 0.85

# Fitted coefficients, bytes per element (validator/memory_fit.py prints them from
# docs/calibration/h200-pretrain-gpt-fit.json, Megatron-LM's pretrain_gpt.py on an H200;
# tests/test_planner.py checks that these agree with it).
STATIC_BYTES_PER_PARAM = 18  # bf16 weights 2 + fp32 gradient buffer 4 + fp32 master weights and Adam 12
STATIC_OTHER_BYTES = 72e6  # RoPE cache and masks
SCORE_BUFFER_BYTES = 2.06  # Megatron's persistent bf16 score buffer, per a*s^2*b (unfused)
LAYER_SBH, LAYER_SBKV, LAYER_SBF = 16.94, 5.32, 8.0  # saved per layer, per s*b*h, s*b*kv, s*b*ffn
LAYER_SCORES = 5.0  # saved per layer, per a*s^2*b, unfused attention (bf16 softmax 2, dropout mask 1, bf16 probs 2)
ONCE_SBV, ONCE_SBH = 4.0, 5.0  # saved once per model: fp32 logits for the loss, embedding output and final norm
FULL_SBH = 2.0  # saved per layer under full recompute: the layer's bf16 input
BACKWARD_SBV, BACKWARD_SBH = 2.0, 0.0  # transient when the backward pass starts (logit gradients)
# A later peak in the backward pass, once the loss's backward has freed BACKWARD_FREED_SBV per s*b*V: the
# last layer's attention backward (unfused), after its recompute; under full recompute on top of the
# whole recomputed layer. Without recompute it never was the peak in the measured rows.
BACKWARD_SCORES = {"none": 0.0, "selective": 8.39, "full": 3.24}
BACKWARD_FREED_SBV = 7.91
# foreach AdamW's sqrt temporary (measured on pretrain_gpt.py); fused updates in place (measured on the
# harness with torch's fused AdamW standing in for TE/Apex FusedAdam, docs/calibration/h200-fit-set.json)
STEP_BYTES_PER_PARAM = {"torch": 3.94, "fused": 0.15}


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


_RELEASE = re.compile(r"(core_[rv])?0\.([0-9]+)(\.|rc|$)")


def groups_ok(minor: int, tp: int, groups: int) -> bool:
    """The GQA check of Megatron's TransformerConfig (megatron/core/transformer/transformer_config.py):
    up to core_v0.15 the query groups must be a multiple of TP; from core_v0.16.0 TP may also be a
    multiple of the groups. tests/data/megatron-gqa-check.json holds what Megatron itself answered."""
    return groups % tp == 0 or (minor >= 16 and tp % groups == 0)


def plan(gpus: int, nodes: int, heads: int, groups: int, micro_batch: int, grad_accum: int,
         tensor: str | int, pipeline: int, seq_length: int = 0, num_layers: int = 0,
         release: str = "core_v0.13.0") -> Plan:
    """The default release only serves the calibration rows (TP 1, which every release accepts);
    plan_for passes the preset's software.megatron."""
    p = Plan(nodes=nodes, gpus_per_node=gpus, world=gpus * nodes, pp=pipeline)
    match = _RELEASE.match(release)
    if not match:
        p.error = f"no plan rules for Megatron release '{release}' (expected core_v0.N.M)"
        return p
    minor = int(match.group(2))
    if tensor == "auto":
        # Smallest valid TP: data parallel first (NVIDIA's sizing guidance), TP only where the
        # model needs it; a preset that needs TP for memory names it (smallest_fitting_tp).
        p.tp = 1
        for t in range(1, gpus + 1):
            if heads % t == 0 and groups_ok(minor, t, groups):
                p.tp = t
                break
    else:
        p.tp = int(tensor)
    if heads % p.tp:
        p.error = f"tensor parallel {p.tp} does not divide {heads} attention heads"
    elif not groups_ok(minor, p.tp, groups):
        if minor >= 16:
            p.error = f"tensor parallel {p.tp} is neither a multiple nor a divisor of {groups} query groups"
        else:
            p.error = (f"{groups} query groups are not a multiple of tensor parallel {p.tp} (Megatron {release}; "
                       "TP as a multiple of the groups needs core_v0.16.0)")
    elif p.tp > gpus:
        p.error = f"tensor parallel {p.tp} is larger than the {gpus} GPUs of a node"
    elif p.world % (p.tp * p.pp):
        p.error = f"world size {p.world} is not divisible by TP x PP = {p.tp * p.pp}"
    elif p.tp > 1 and seq_length % p.tp:
        p.error = f"sequence length {seq_length} is not divisible by tensor parallel {p.tp} (sequence parallelism)"
    elif num_layers % p.pp:
        p.error = f"{num_layers} layers do not split evenly into {p.pp} pipeline stages"
    if p.error:
        return p
    p.dp = p.world // (p.tp * p.pp)
    p.global_batch = micro_batch * p.dp * grad_accum
    return p


def plan_for(manifest: dict, nodes: int, gpus: int | None = None) -> Plan:
    m, par = manifest["model"], manifest["parallelism"]
    return plan(gpus or manifest["topology"]["gpu"]["per_node"], nodes, m["num_attention_heads"],
                m["num_query_groups"], m["micro_batch_size"], m["grad_accum_steps"],
                par["tensor"], par["pipeline"], m["seq_length"], m["num_layers"], manifest["software"]["megatron"])


def smallest_fitting_tp(manifest: dict, nodes: int) -> int | None:
    """The smallest valid TP within a node whose memory estimate fits at this node count (None if none
    does): the TP a preset should name (NVIDIA's sizing guidance: TP only as far as memory needs it)."""
    for tp in range(1, manifest["topology"]["gpu"]["per_node"] + 1):
        p = plan_for({**manifest, "parallelism": {**manifest["parallelism"], "tensor": tp}}, nodes)
        if not p.error and estimate_memory(manifest, p).fits:
            return tp
    return None


def padded_vocab(vocab: int, tp: int) -> int:
    """The vocabulary Megatron's pretrain_gpt.py builds: NullTokenizer (what the presets use) adds an
    end-of-document token, then the size is padded to a multiple of 128 x TP
    (--make-vocab-size-divisible-by 128)."""
    multiple = 128 * tp
    return -(-(vocab + 1) // multiple) * multiple


def layer_parameters(model: dict) -> int:
    h, a, g = model["hidden_size"], model["num_attention_heads"], model["num_query_groups"]
    kv = g * (h // a)
    return h * h + 2 * h * kv + h * h + 3 * h * model["ffn_hidden_size"] + 2 * h


def shape_terms(model: dict, vocab: int) -> dict:
    """The element counts the fitted coefficients multiply (validator/memory_fit.py fits on the same)."""
    s, b, h, a = model["seq_length"], model["micro_batch_size"], model["hidden_size"], model["num_attention_heads"]
    return {"sbh": s * b * h, "sbkv": s * b * model["num_query_groups"] * (h // a),
            "sbf": s * b * model["ffn_hidden_size"], "scores": a * s * s * b, "sbv": s * b * vocab}


def parameter_count(model: dict, vocab: int | None = None) -> int:
    embeddings = 2 * (vocab or model["vocab_size"]) * model["hidden_size"]  # untied input and output
    return model["num_layers"] * layer_parameters(model) + embeddings + model["hidden_size"]


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
    reserve_gib: float  # the caching allocator's blocks reserved beyond the peak (fragmentation)
    total_gib: float
    budget_gib: float

    @property
    def fits(self) -> bool:
        return self.total_gib <= self.budget_gib


def estimate_memory(manifest: dict, p: Plan, pad_vocab: bool = True) -> Memory:
    """The per-GPU estimate of the busiest pipeline stage. pad_vocab=False for a GPTModel built with
    the exact vocabulary (the calibration runs), True for what pretrain_gpt.py builds."""
    model = manifest["model"]
    vocab = padded_vocab(model["vocab_size"], p.tp) if pad_vocab else model["vocab_size"]
    params = parameter_count(model, vocab)
    if p.pp == 1:
        return _stage_memory(manifest, p, vocab, params, params, first=True, last=True)
    # The first stage holds the input embedding and the most micro-batches in flight; the last
    # holds the output layer, the final norm and the logits: the larger of the two is the estimate.
    stage_layers = model["num_layers"] // p.pp * layer_parameters(model)
    h = model["hidden_size"]
    first = _stage_memory(manifest, p, vocab, params, stage_layers + vocab * h, first=True, last=False)
    last = _stage_memory(manifest, p, vocab, params, stage_layers + vocab * h + h, first=False, last=True)
    return max(first, last, key=lambda m: m.allocated_gib)


def _stage_memory(manifest: dict, p: Plan, vocab: int, params: int, stage_params: int, first: bool,
                  last: bool) -> Memory:
    model = manifest["model"]
    tp, pp, dp = p.tp, p.pp, p.dp
    shard = stage_params / tp
    terms = shape_terms(model, vocab)
    sbh, sbkv, sbf, scores = terms["sbh"], terms["sbkv"], terms["sbf"], terms["scores"]
    sbv = terms["sbv"] if last else 0  # logits exist on the last stage only
    unfused = model["attention"] == "unfused"  # flash attention never holds the s x s scores
    recompute = model["recompute"]

    weights, grads = 2 * shard, 4 * shard  # bf16 weights, fp32 gradient buffer
    optimizer = 12 * shard / dp  # fp32 master weights, Adam m and v: sharded by the distributed optimizer
    other = STATIC_OTHER_BYTES + (SCORE_BUFFER_BYTES * scores / tp if unfused else 0)
    static = weights + grads + optimizer + other

    # Activations are divided by TP: with sequence parallelism (megatron-node turns it on with TP > 1)
    # every saved tensor of a layer is split over the TP ranks. Under 1F1B the first pipeline stage
    # holds min(PP, micro-batches) micro-batches in flight, the last one.
    layer_linear = (LAYER_SBH * sbh + LAYER_SBKV * sbkv + LAYER_SBF * sbf) / tp
    layer_scores = LAYER_SCORES * scores / tp if unfused else 0.0
    in_flight = min(pp, model["grad_accum_steps"]) if first and pp > 1 else 1
    layers_here = model["num_layers"] / pp
    if recompute == "full":  # only each layer's input is kept; one layer is redone in the backward pass
        activations = FULL_SBH * sbh / tp * layers_here * in_flight
        redone = layer_linear + layer_scores
    elif recompute == "selective":  # core attention recomputed: its scores are not kept
        activations = layer_linear * layers_here * in_flight
        redone = 0.0
    else:
        activations = (layer_linear + layer_scores) * layers_here * in_flight
        redone = 0.0
    once = (ONCE_SBV * sbv + ONCE_SBH * sbh) / tp
    # The backward peak is the larger of two moments: its start (the logits' gradient) and the last
    # layer's backward (its recompute and attention backward), by when the loss has freed part of the logits.
    attention = BACKWARD_SCORES[recompute] * scores / tp if unfused else 0.0
    later = max(0.0, redone + attention - BACKWARD_FREED_SBV * sbv / tp)
    backward = (BACKWARD_SBV * sbv + BACKWARD_SBH * sbh) / tp + later
    backward_peak = static + activations + once + backward
    step_peak = static + STEP_BYTES_PER_PARAM[model.get("optimizer", "fused")] * shard / dp
    allocated = max(backward_peak, step_peak) / GIB
    reserve = RESERVE_SBV * sbv / tp / GIB
    total = allocated + FIXED_ALLOWANCE_GIB + reserve
    budget = manifest["topology"]["gpu"]["memory_gib"] * HEADROOM_FRACTION
    return Memory(params, weights / GIB, grads / GIB, optimizer / GIB, other / GIB, activations / GIB,
                  once / GIB, backward / GIB, step_peak / GIB, allocated, FIXED_ALLOWANCE_GIB, reserve,
                  total, budget)


def as_dict(p: Plan, mem: Memory | None) -> dict:
    out = {"plan": asdict(p)}
    if mem is not None:
        out["memory_gib"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(mem).items()}
        out["memory_gib"]["fits"] = mem.fits
    return out
