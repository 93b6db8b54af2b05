"""Files must be UTF-8 text.

Premise: the validator, YAML 1.2 and shellcheck read UTF-8; other bytes are guessed at. Holds for:
every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-encoding"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "Files must be UTF-8 text."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho caf\u00e9\n"}
BAD = {"run.sbatch": b"#!/bin/bash\necho caf\xe9\n"}
check = loader_check(ID)
