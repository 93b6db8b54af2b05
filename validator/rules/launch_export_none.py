"""--export=NONE is inherited by every srun step, which then starts without PATH; set SLURM_EXPORT_ENV=ALL or pass srun --export.

Premise: sbatch --export=NONE sets SLURM_EXPORT_ENV=NONE in the job (src/sbatch/opt.c at
slurm-22-05-0-1 and slurm-26-05-1-1) and srun reads SLURM_EXPORT_ENV as its --export (env_vars in
src/srun/libsrun/opt.c at slurm-22-05-0-1, src/srun/opt.c at slurm-26-05-1-1): every step starts
without PATH. Holds for: 22.05-26.05.
"""
from validator.rules.base import GOOD_BATCH, bad_batch

ID = "launch-export-none"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = '--export=NONE is inherited by every srun step, which then starts without PATH; set SLURM_EXPORT_ENV=ALL or pass srun --export.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export SLURM_EXPORT_ENV=ALL\n", "")


def check(target):
    script = target.script
    export = script.parsed.value("export")
    if export is None or export.split(",")[0].upper() not in ("NONE", "NIL"):
        return
    shell = script.shell
    if any(a.name == "SLURM_EXPORT_ENV" and (a.value or "").upper().startswith("ALL") for a in shell.assignments):
        return
    sruns = shell.named("srun")
    if sruns and all(c.has_flag("--export") for c in sruns):
        return
    option = script.parsed.get("export")[-1]
    yield (script.display, option.line, option.col,
           "--export=NONE reaches every srun step (no PATH: 'execve(): No such file'); "
           "add 'export SLURM_EXPORT_ENV=ALL' after the directives")
