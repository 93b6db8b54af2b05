"""Helpers shared by rule modules."""
from __future__ import annotations

import re

from validator.model import Target


def loader_check(rule_id: str):
    """A `check` that reports what the file readers and the YAML loader found under `rule_id`.

    Reading happens before any rule runs (a file that cannot be read cannot be checked), so these
    rules only surface those findings; they exist so that every id has a module, a description and
    examples.
    """
    def check(target: Target):
        for finding in getattr(target, "load_problems", []):
            if finding.rule == rule_id:
                yield finding
    return check


def script_files(target: Target):
    if target.script is not None:
        yield target.script


TOPOLOGY_PREFIXES = ("NCCL_", "UCX_", "TORCH_", "CUDA_")
# A secret is what a variable holds: a whole word of its name (HF_TOKEN, WANDB_API_KEY,
# AWS_SECRET_ACCESS_KEY), not a substring (MAX_NEW_TOKENS, TOKENIZER).
_SECRET = re.compile(r"(^|_)(API_?KEY|ACCESS_KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)(_|$)", re.IGNORECASE)

# A batch script that every launch rule leaves alone: the GOOD example they share.
GOOD_BATCH = """#!/bin/bash
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-task=8
#SBATCH --time=00:30:00
#SBATCH --export=NONE
set -euo pipefail
export SLURM_EXPORT_ENV=ALL
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
export MASTER_ADDR=${hosts%%$'\\n'*}
export MASTER_PORT=$(( 20000 + SLURM_JOB_ID % 12000 ))
# shellcheck disable=SC2016  # expanded inside the step
srun --kill-on-bad-exit=1 --ntasks-per-node=1 bash -c 'exec torchrun --nproc-per-node="$SLURM_GPUS_ON_NODE" \\
    --nnodes="$SLURM_NNODES" --rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" train.py'
"""


def bad_batch(old: str, new: str) -> dict:
    """The shared GOOD example with one edit: a BAD example."""
    assert old in GOOD_BATCH, old
    return {"run.sbatch": GOOD_BATCH.replace(old, new, 1)}


def is_batch_script(script) -> bool:
    """Launch rules apply to batch scripts: a .sbatch file or one with #SBATCH directives."""
    return script is not None and (script.display.endswith(".sbatch") or bool(script.parsed.directives))


def is_decimal(text: str | None) -> bool:
    """ASCII digits only: str.isdigit() also accepts '²' and '١', which int() and bash refuse."""
    return bool(text) and text.isascii() and text.isdigit()


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def manifest_of(target):
    return target.preset.manifest if target.preset is not None else None


def topology_settings(shell):
    """name -> assignments of the NCCL_/UCX_/TORCH_/CUDA_ variables a script sets."""
    found = {}
    for a in shell.assignments:
        if a.name.startswith(TOPOLOGY_PREFIXES):
            found.setdefault(a.name, []).append(a)
    return found


def setting_value(assignment) -> str:
    return assignment.value if assignment.value is not None else assignment.raw


_PROGRAMS = ("torchrun", "bash", "sh", "python", "python3")


def _embedded(command):
    """A command that another one runs (srun ... torchrun ..., exec bash -c ...), as a Command."""
    from validator.shell import Command

    for i, arg in enumerate(command.args):
        base = (arg.value or "").rsplit("/", 1)[-1]
        if base in _PROGRAMS or base.startswith("python3."):
            return Command(base, command.args[i + 1:], arg.line, arg.col, command.in_pipeline,
                           command.conditional, command.node)
    return None


def with_payloads(shell, depth: int = 0):
    """Commands of the script, the commands they run (srun ... torchrun), and those of literal
    `bash -c '...'` payloads (run inside steps). Yields (command, inside_another)."""
    from validator.shell import parse_shell

    for command in shell.commands:
        chain = [command]
        inner = _embedded(command) if command.name in ("srun", "exec", "env", "timeout", "nohup", "numactl") else None
        if inner is not None:
            chain.append(inner)
        for position, current in enumerate(chain):
            yield current, depth > 0 or position > 0
            if current.name in ("bash", "sh") and depth < 2:
                payload = current.option("-c")
                if payload is not None and payload.value:
                    for sub, _ in with_payloads(parse_shell(payload.value), depth + 1):
                        # positions inside a payload are reported at the payload's start
                        sub.line, sub.col = payload.line, payload.col
                        for arg in sub.args:
                            arg.line, arg.col = payload.line, payload.col
                        yield sub, True


def launcher_commands(shell):
    """torchrun invocations, also as `python -m torch.distributed.run`."""
    for command, inside in with_payloads(shell):
        if command.name == "torchrun":
            yield command
        elif command.name.rsplit("/", 1)[-1].startswith("python"):
            texts = [a.value for a in command.args[:2]]
            if texts == ["-m", "torch.distributed.run"]:
                yield command


# Project functions that take a container image (and its arch) as arguments.
IMAGE_FUNCTIONS = {"smoke_container": (0, 1)}


def image_uses(shell):
    """(Word of an image reference, arch Word or None) for every image the script names."""
    for command, _ in with_payloads(shell):
        if command.name in IMAGE_FUNCTIONS:
            image_at, arch_at = IMAGE_FUNCTIONS[command.name]
            if len(command.args) > image_at:
                arch = command.args[arch_at] if len(command.args) > arch_at else None
                yield command.args[image_at], arch
        elif command.name in ("srun", "sbatch", "salloc"):
            word = command.option("--container-image")
            if word is not None:
                yield word, None


def _array_or_string_words(shell, name: str) -> list[str]:
    """The literal words a variable or array holds wherever the script sets it (split on blanks)."""
    from validator.shell import literal

    words = []
    for a in shell.assignments:
        if a.name == name:
            words += (a.value if a.value is not None else a.raw).replace("\\\n", " ").split()
    stack = [shell.root] if shell.root is not None else []
    while stack:  # NAME=(...) and NAME+=(...)
        node = stack.pop()
        if node.type == "variable_assignment":
            name_node = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name_node is not None and name_node.text.decode() == name and value is not None \
                    and value.type == "array":
                for child in value.children:
                    text = literal(child)
                    words += (text or child.text.decode("utf-8", "replace")).split()
        stack.extend(node.children)
    return [w.strip("\"'") for w in words]


def srun_option(shell, command, *names):
    """An srun option as written, or passed through a variable or array (`srun $SRUN_ARGS`,
    `srun "${ARGS[@]}"`) that the script fills with it. A Word, or None."""
    import re

    from validator.shell import Command, Word

    found = command.option(*names)
    if found is not None:
        return found
    for arg in command.args:
        match = re.fullmatch(r'"?\$\{?(\w+)(\[[@*]\])?\}?"?', arg.raw)
        if not match:
            continue
        words = _array_or_string_words(shell, match.group(1))
        probe = Command("srun", [Word(w, w, arg.line, arg.col) for w in words], arg.line, arg.col, False, False)
        inner = probe.option(*names)
        if inner is not None:
            return inner
    return None
