"""The preset's Megatron plan must be valid, and fit in memory, at every node count it supports.

Premise: Megatron refuses a parallel plan that does not divide the model or the GPUs, and a plan
that does not fit runs out of memory (validator/planner.py, Megatron-LM core_v0.13.0). Holds for:
every Slurm release (no Slurm behaviour involved). Applies to presets only (needs a manifest): the
presets' own consistency, strict by construction.
"""
ID = "plan-invalid"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = ("The parallel plan breaks (heads, query groups, TP, world size) or the memory estimate "
               "exceeds the GPU at some node count in the manifest's range.")
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "  tensor: auto\n", "  tensor: 16\n")}


def check(target):
    from validator.planner import estimate_memory, plan_for

    preset = target.preset
    manifest = preset.manifest if preset else None
    if manifest is None:
        return  # the schema rule reports why; the planner sees only what the schema accepts
    low, high = manifest["nodes"]["min"], manifest["nodes"]["max"]
    if low > high:
        line, col = preset.document.position(("nodes", "min"))
        yield (preset.display, line, col, f"nodes.min {low} is larger than nodes.max {high}: no node count is valid")
        return
    try:
        plans = [plan_for(manifest, n) for n in range(low, min(high, 4096) + 1)]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return  # an incomplete manifest is the schema rule's business
    broken = next((p for p in plans if p.error), None)
    if broken:
        line, col = preset.document.position(("parallelism", "tensor"))
        yield (preset.display, line, col,
               f"no valid plan on {broken.nodes} node(s) x {broken.gpus_per_node} GPU(s): {broken.error}")
        return
    # The smallest data-parallel size shards the optimizer least: the lowest node count is the worst.
    worst = plans[0]
    try:
        mem = estimate_memory(manifest, worst)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return
    if not mem.fits:
        line, col = preset.document.position(("model",))
        yield (preset.display, line, col,
               f"estimated {mem.total_gib:.1f} GiB per GPU on {worst.nodes} node(s) (TP {worst.tp}, DP {worst.dp}) "
               f"exceeds {mem.budget_gib:.1f} GiB usable of {manifest['topology']['gpu']['memory_gib']} GiB "
               f"(weights {mem.weights_gib:.1f}, grads {mem.grads_gib:.1f}, optimizer {mem.optimizer_gib:.1f}, "
               f"activations {mem.activations_gib:.1f})")
