"""sbatch refuses a script whose first line is not a '#!' interpreter line.

Premise: sbatch stops with "This does not look like a batch script. The first line must start with
#!" (src/sbatch/sbatch.c at slurm-22-05-0-1 and slurm-26-05-1-1). Holds for: 22.05-26.05. Another
interpreter than bash is a preset policy (the job library is bash), reported in the strict profile
only: slurmstepd runs the script with the interpreter it names, and a POSIX sh script runs as
written (round two of docs/real-world.md: 0 of 4 true).
"""
ID = "sbatch-shebang"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "The script must start with a '#!' line (sbatch refuses it otherwise); bash is expected."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#SBATCH --time=00:05:00\necho ok\n"}


def check(target):
    script = target.script
    first = script.parsed.lines[0] if script.parsed.lines else ""
    if script.source.bom:
        yield (script.display, 1, 1, "a UTF-8 byte order mark before '#!': sbatch refuses the file; save it without BOM")
        return
    odd = next((i for i, ch in enumerate(first) if ord(ch) > 127), None) if first.startswith("#!") else None
    if odd is not None:
        yield (script.display, 1, odd + 1, f"non-ASCII character {first[odd]!r} (U+{ord(first[odd]):04X}) in the '#!' line: "
               "the kernel looks for that interpreter or option and the job fails at once")
        return
    if not first.startswith("#!"):
        yield (script.display, 1, 1, "no '#!' line: sbatch refuses a batch script without one")
    elif "bash" not in first and target.strict:  # /bin/sh runs a POSIX script as written: bash is a preset policy
        yield (script.display, 1, 1, f"interpreter '{first[2:].strip()}' is not bash; presets are bash scripts")
