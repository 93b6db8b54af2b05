"""A directive value that sbatch rejects: a variable (never expanded in #SBATCH lines), a word where a count, a size or a time belongs; a template placeholder."""
import re

ID = "sbatch-bad-value"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A directive value sbatch rejects: a variable ($1 is never expanded in #SBATCH lines), a word where a "
               "count, size or time belongs, or an unrendered template placeholder.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=1-02:00:00\n#SBATCH --nodes=2-4\n#SBATCH --mem=80G\n"
                      "#SBATCH --gpus-per-node=h100:8\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --nodes=$1\nset -euo pipefail\necho ok\n"}

_COUNT = re.compile(r"\d+")
_RANGE = re.compile(r"\d+(-\d+)?")
_GPUS = re.compile(r"([\w.-]+:)?\d+")
_SIZE = re.compile(r"\d+([KMGT]B?)?", re.IGNORECASE)
_TIME = re.compile(r"\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+")
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|<[A-Za-z_][\w -]*>|\byour_own_\w+|\bYOUR_\w+")

# option -> (pattern, what the value must be); from sbatch's man page for each option
TYPES = {
    "nodes": (_RANGE, "a node count or min-max range"),
    "ntasks": (_COUNT, "a task count"),
    "ntasks-per-node": (_COUNT, "a task count"),
    "cpus-per-task": (_COUNT, "a CPU count"),
    "gpus-per-node": (_GPUS, "[type:]count"),
    "gpus-per-task": (_GPUS, "[type:]count"),
    "gpus": (_GPUS, "[type:]count"),
    "mem": (_SIZE, "a size such as 80G"),
    "mem-per-cpu": (_SIZE, "a size such as 4G"),
    "mem-per-gpu": (_SIZE, "a size such as 80G"),
    "time": (_TIME, "a time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"),
    "time-min": (_TIME, "a time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"),
}
_UNLIMITED = {"time": {"unlimited", "infinite"}, "time-min": {"unlimited", "infinite"}}


def check(target):
    script = target.script
    parsed = script.parsed
    templated = bool(parsed.template_lines)
    if templated:
        line = parsed.template_lines[0]
        yield (script.display, line, 1, "#SBATCH line with a template placeholder ({{ }}): this file is a template; "
               "render it before sbatch")
    for option in parsed.options:
        if option.line in parsed.template_lines:
            continue
        value = option.value
        if option.name is None or option.problem or value is None:
            continue
        if _PLACEHOLDER.search(value):
            if not templated:  # said once: the file is a template, not a job
                templated = True
                yield (script.display, option.line, option.col,
                       f"'{value}' is a template placeholder: this file is a template; render it before sbatch")
            continue
        if "$" in value or "`" in value:
            yield (script.display, option.line, option.col,
                   f"--{option.name}={value}: sbatch never expands variables in #SBATCH lines; "
                   "pass the value on the sbatch command line instead")
            continue
        kind = TYPES.get(option.name)
        if kind and not kind[0].fullmatch(value) and value.lower() not in _UNLIMITED.get(option.name, ()):
            yield (script.display, option.line, option.col, f"--{option.name}={value} is not {kind[1]}; sbatch rejects it")
