"""A script that takes KEY=VALUE settings must not overwrite them: its defaults are `${NAME:-value}`.

Premise: `smoke_init NAME MIN MAX "$@"` (scripts/job-lib.sh, `smoke_settings`) exports every KEY=VALUE given
after the script. A later unconditional `export NCCL_NET=IB` replaces what the user passed, so the
README's `sbatch ... train.sbatch NCCL_NET_PLUGIN=ofi` silently does nothing (issue 25, finding 7).
Holds for: every Slurm release (bash's own assignment semantics, not Slurm's). It fires only in
scripts that hand "$@" to this project's job library, where it is a defect, not a policy.
"""
import re

ID = "launch-setting-shadowed"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("After a script takes KEY=VALUE settings (smoke_init/smoke_settings \"$@\"), an unconditional "
               "NAME=value of a settable family replaces the user's value: write export NAME=\"${NAME:-value}\".")
_HEAD = "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nsource \"$SLURM_SUBMIT_DIR/scripts/job-lib.sh\"\n" \
        "smoke_init demo 1 4 \"$@\"\n"
GOOD = {"run.sbatch": _HEAD + "export NCCL_IB_HCA=\"${NCCL_IB_HCA:-mlx5}\"\n: \"${UCX_TLS:=tcp}\"\nexport UCX_TLS\n"}
BAD = {"run.sbatch": _HEAD + "export NCCL_IB_HCA=mlx5\n"}

# The families scripts/job-lib.sh accepts as KEY=VALUE (its SMOKE_SETTING_NAMES; a test keeps them equal).
SETTING_NAMES = re.compile(r"^(SMOKE|MEGATRON|NCCL|UCX|SHARP|TORCH|PET|PYXIS|WANDB)_[A-Z0-9_]*$")
# The job-lib functions that export the KEY=VALUE arguments they are given.
ENTRY_POINTS = ("smoke_init", "smoke_settings")
_DEFAULT_OF = r"^\"?\$\{{{name}:?[-=][^}}]*\}}\"?$"


def _entry_line(shell) -> int | None:
    """The line where the script takes its KEY=VALUE arguments ("$@" handed to job-lib), or None."""
    lines = [c.line for c in shell.named(*ENTRY_POINTS) if any(a.raw in ('"$@"', "$@") for a in c.args)]
    return min(lines) if lines else None


def _assignment_nodes(root):
    """(line, col) -> variable_assignment node, for every assignment in the tree."""
    found, stack = {}, [root] if root is not None else []
    while stack:
        node = stack.pop()
        if node.type == "variable_assignment":
            found[(node.start_point[0] + 1, node.start_point[1] + 1)] = node
        stack.extend(node.children)
    return found


def _guarded(node, name: str) -> bool:
    """Inside a function (runs only when called), a command's own environment (NAME=v cmd), or an
    if/case/&&/|| whose test reads the same variable (`[[ -z ${NAME:-} ]] && NAME=v`)."""
    parent = node.parent
    if parent is not None and parent.type == "command":
        return True
    reads = re.compile(r"\$\{?" + re.escape(name) + r"\b")
    while parent is not None:
        if parent.type == "function_definition":
            return True
        if parent.type in ("if_statement", "elif_clause", "while_statement"):
            condition = parent.child_by_field_name("condition")
            tests = condition if condition is not None else (parent.children[1] if len(parent.children) > 1 else None)
            if tests is not None and reads.search(tests.text.decode("utf-8", "replace")):
                return True
        if parent.type == "case_statement":
            value = parent.child_by_field_name("value")
            if value is not None and reads.search(value.text.decode("utf-8", "replace")):
                return True
        if parent.type == "list" and parent.children and reads.search(parent.children[0].text.decode("utf-8", "replace")):
            return True
        parent = parent.parent
    return False


def check(target):
    script = target.script
    shell = script.shell
    entry = _entry_line(shell)
    if entry is None:
        return
    nodes = None
    for a in shell.assignments:
        if a.line <= entry or not SETTING_NAMES.match(a.name) or (a.value is None and a.raw == ""):
            continue  # before the settings are taken, another family, or a bare `export NAME`
        if re.match(_DEFAULT_OF.format(name=re.escape(a.name)), a.raw):
            continue
        if nodes is None:
            nodes = _assignment_nodes(shell.root)
        node = nodes.get((a.line, a.col))
        if node is not None and _guarded(node, a.name):
            continue
        default = a.value if a.value is not None else a.raw
        yield (script.display, a.line, a.col,
               f"{a.name}={a.raw} replaces the {a.name} a user passes as KEY=VALUE (taken on line {entry}); "
               f"make it a default: export {a.name}=\"${{{a.name}:-{default}}}\"")
