"""sbatch refuses scripts with DOS line endings.

Premise: sbatch stops with "Batch script contains DOS line breaks (\r\n)" (src/sbatch/sbatch.c at
slurm-22-05-0-1 and slurm-26-05-1-1). Holds for: 22.05-26.05.
"""
ID = "sbatch-crlf"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "CRLF (DOS) line endings: sbatch refuses the script."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\r\n#SBATCH --time=00:05:00\r\necho ok\r\n"}


def check(target):
    script = target.script
    lines = script.parsed.crlf_lines
    if lines:
        first = lines[0]
        yield (script.display, first, len(script.parsed.lines[first - 1]) + 1,
               f"CRLF line ending ({len(lines)} line(s)); sbatch refuses DOS line endings: convert with dos2unix")
