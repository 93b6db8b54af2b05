"""The attention backend a preset asks Megatron for must be one the image's TransformerEngine + flash-attn pair can run.

Premise: `--attention-backend flash` makes Megatron switch TE's fused and unfused backends off
(language_module.py, `_set_attention_backend`); TE then uses flash-attn only inside its version
window (scripts/smoke/data/te-flash-attn.json), and with nothing left it raises "No dot product
attention support for the provided inputs!" at the first step (docs/preset-stack-review.md).
Holds for: Megatron-LM main 5863c5b (the pinned image's) and core_v0.11.0 to core_v0.13.0, with the
TransformerEngine releases the table lists (v1.7 to v2.18); not a Slurm premise, so every release.
"""
from validator.rules.base import manifest_of, with_payloads
from smoke.stack import ATTENTION_BACKENDS, flash_problem

ID = "xcheck-attention-backend"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = ("The attention backend the preset asks for (MEGATRON_ATTENTION, --attention-backend, model.attention) "
               "must be one the manifest's stack (TransformerEngine + flash-attn) can run.")
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "  attention: fused\n", "  attention: flash\n")}


def _asked(target):
    """(display, line, col, backend) for every place the preset names an attention backend."""
    preset, script = target.preset, target.script
    model = (manifest_of(target) or {}).get("model")
    if isinstance(model, dict) and isinstance(model.get("attention"), str):
        line, col = preset.document.position(("model", "attention"))
        yield preset.display, line, col, model["attention"]
    if script is None:
        return
    for a in script.shell.assignments:
        if a.name == "MEGATRON_ATTENTION" and a.value:
            yield script.display, a.line, a.col, a.value
    for command, _ in with_payloads(script.shell):
        word = command.option("--attention-backend")
        if word is not None and word.value:
            yield script.display, word.line, word.col, word.value


def check(target):
    stack = (manifest_of(target) or {}).get("stack")
    if not isinstance(stack, dict):
        return  # manifest-schema requires the stack with a Megatron image
    te, flash_attn = stack.get("transformer_engine"), stack.get("flash_attn")
    if not isinstance(te, str) or not isinstance(flash_attn, str):
        return
    for display, line, col, backend in _asked(target):
        if backend not in ATTENTION_BACKENDS:
            yield (display, line, col, f"'{backend}' is not a Megatron attention backend ({', '.join(ATTENTION_BACKENDS)})")
        elif backend == "flash":
            problem = flash_problem(te, flash_attn, stack.get("flash_attn_3"))
            if problem:
                yield (display, line, col,
                       f"attention backend 'flash' cannot run on this stack: {problem}, and Megatron's 'flash' turns "
                       "TE's fused and unfused backends off, so TE raises 'No dot product attention support'; "
                       "use 'fused' (TE's cuDNN kernel, what TE picks on Hopper) or an image whose flash-attn fits")
