"""A smoke test must be bounded: the batch script needs #SBATCH --time.

Premise: without --time a job gets the partition's default time limit, else its maximum (sbatch.1 at
slurm-22-05-0-1 and slurm-26-05-1-1): a hung job holds its nodes that long. Holds for: 22.05-26.05.
"""
from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-time-limit"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A smoke test must be bounded: the batch script needs #SBATCH --time.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("#SBATCH --time=00:30:00\n", "")


def check(target):
    script = target.script
    parsed = script.parsed
    # a template that includes its header ({% include 'slurm_header' %}): the directives are elsewhere
    included = any("include" in parsed.lines[n - 1] for n in parsed.engine_lines if n <= len(parsed.lines))
    # a README, notes or a report that quotes a job script or #SBATCH lines to paste: no job to bound
    if is_batch_script(script) and not parsed.get("time") and not included and not script.quotes_job_text:
        yield (script.display, 1, 1, "no #SBATCH --time: a hung job holds its nodes until the partition's limit")
