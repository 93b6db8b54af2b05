"""Megatron flags exist in the pinned Megatron-LM release (validator/data/megatron-flags/), and the script's MEGATRON_* defaults equal the manifest's model and parallelism.

Premise: Megatron-LM refuses flags its pinned release does not define (validator/data/megatron-
flags/). Holds for: every Slurm release (no Slurm behaviour involved). Applies to presets only
(needs a manifest): the presets' own consistency, strict by construction.
"""
from validator.rules.base import manifest_of, with_payloads

ID = "xcheck-megatron"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = "Megatron flags exist in the pinned Megatron-LM release (validator/data/megatron-flags/), and the script's MEGATRON_* defaults equal the manifest's model and parallelism."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "  num_layers: 12\n", "  num_layers: 16\n")}


import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

FLAGS = Path(__file__).resolve().parent.parent / "data" / "megatron-flags"
PARALLEL = {"MEGATRON_TENSOR_PARALLEL": "tensor", "MEGATRON_PIPELINE_PARALLEL": "pipeline"}


@lru_cache(maxsize=None)
def flags_of(release: str):
    """The flag list of a release named in the manifest: only a file of the package's own data
    folder, by exact name (a manifest cannot name a path)."""
    if f"{release}.txt" not in {p.name for p in FLAGS.glob("*.txt")}:
        return None
    return {line.strip() for line in (FLAGS / f"{release}.txt").read_text(encoding="utf-8").split("\n")
            if line.startswith("--")}


def _megatron_words(target):
    """(display, words or a read problem) of every place that builds pretrain_gpt.py's arguments."""
    script = target.script
    launcher_seen = False
    for command, _ in with_payloads(script.shell):
        values = [a.value or "" for a in command.args]
        at = next((i for i, v in enumerate(values) if v.endswith("pretrain_gpt.py")), None)
        if at is not None:
            yield script.display, command.args[at + 1:]
        if launcher_seen:
            continue
        if any(v.endswith("scripts/megatron-node") for v in values) or "megatron-node" in " ".join(a.raw for a in command.args):
            launcher_seen = True
            launcher = target.repo_root / "scripts" / "megatron-node"
            if os.path.lexists(launcher):
                from validator.shell import parse_shell
                from validator.source import read_source

                shown = str(launcher.relative_to(target.repo_root))
                src = read_source(launcher, target.repo_root)
                if not src.usable:
                    yield [replace(p, path=shown) for p in src.problems], None
                    continue
                yield shown, parse_shell(src.text).array_words()


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    release = (manifest.get("software") or {}).get("megatron")
    flags = flags_of(str(release))
    if flags is None:
        line, col = target.preset.document.position(("software", "megatron"))
        yield (target.preset.display, line, col, f"no flag list for Megatron-LM '{release}' in validator/data/megatron-flags/")
    else:
        for display, words in _megatron_words(target):
            if words is None:  # scripts/megatron-node could not be read safely
                yield from display
                continue
            for word in words:
                flag = (word.value or "").split("=", 1)[0]
                if flag.startswith("--") and flag not in flags:
                    yield (display, word.line, word.col, f"{flag} is not a flag of Megatron-LM {release}")
    model = manifest.get("model") or {}
    parallel = manifest.get("parallelism") or {}
    for a in script.shell.assignments:
        if not a.name.startswith("MEGATRON_") or a.value is None:
            continue
        if a.name in PARALLEL:
            expected = parallel.get(PARALLEL[a.name])
        else:
            expected = model.get(a.name[len("MEGATRON_"):].lower())
        if expected is not None and str(expected) != a.value:
            yield (script.display, a.line, a.col, f"{a.name} defaults to {a.value} but preset.yaml says {expected}")
