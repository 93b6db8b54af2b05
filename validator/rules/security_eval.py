"""eval runs text as code: with values from manifests or the environment that is an injection; use arrays."""

ID = "security-eval"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'eval runs text as code: with values from manifests or the environment that is an injection; use arrays.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nargs=(--time 5)\necho \"${args[@]}\"\n"
                      "eval set -- \"$(getopt -o n: -- \"$@\")\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\neval \"echo $ARGS\"\n"}


def _harmless(shell, command) -> bool:
    """`eval set -- "$(getopt ...)"` (getopt quotes what it prints, also through a variable set from
    it) and literal text are no injection."""
    words = [a.value for a in command.args]
    if words[:2] == ["set", "--"] and len(words) > 2:
        def from_getopt(arg):
            name = arg.raw.strip('"').lstrip("$").strip("{}")
            assigned = shell.assigned(name) if name.isidentifier() else []
            return "getopt" in arg.raw or (assigned and all("getopt" in a.raw for a in assigned))
        if all(from_getopt(arg) for arg in command.args[2:]):
            return True
    return all(word is not None for word in words)


def check(target):
    for command in target.script.shell.named("eval"):
        if _harmless(target.script.shell, command):
            continue
        yield (target.script.display, command.line, command.col, "eval runs text as code; build an argument array instead")
