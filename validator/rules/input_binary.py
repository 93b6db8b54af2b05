"""A file with NUL bytes is binary; sbatch refuses it too.

Premise: sbatch refuses a script holding a NUL byte ("contain a NULL character", src/sbatch/sbatch.c
at slurm-22-05-0-1 and slurm-26-05-1-1); a manifest with one is no YAML text. Holds for:
22.05-26.05.
"""
from validator.rules.base import loader_check

ID = "input-binary"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file with NUL bytes is binary; sbatch refuses it too."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n\x00\x01\x02"}
check = loader_check(ID)
