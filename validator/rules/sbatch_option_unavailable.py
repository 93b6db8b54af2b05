"""An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare.

Premise: an option absent from the selected release's src/common/slurm_opt.c is unknown to its
sbatch (validator/data/sbatch_options.json, per release); a SPANK plugin's options exist only where
the plugin is loaded. Holds for: exactly the releases the table lists per option (--slurm-version,
the manifest's slurm.min_version, else the newest).
"""
from validator.rules.base import option_check

ID = "sbatch-option-unavailable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --power=level\necho ok\n"}  # gone since 24.05
check = option_check(("unavailable", "spank"))

