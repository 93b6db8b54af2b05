"""GPU options that Slurm before 23.11 refuses on a cluster running select/cons_res.

Premise: Slurm 22.05 and 23.02 reject a job that asks with --gpus, --gpus-per-socket, --gpus-per-task,
--cpus-per-gpu or --mem-per-gpu unless SelectType is select/cons_tres ("Requested GRES option
unsupported by configured SelectType plugin": src/common/gres.c l.5680 at slurm-22-05-8-1,
src/interfaces/gres.c l.5920 at slurm-23-02-7-1; doc/html/gres.shtml). select/cons_res was removed
only in 23.11 (RELEASE_NOTES). --gpus-per-node (and --gres=gpu:N) is not in that list.
Holds for: 22.05 to 23.02 (slurm-22-05-8-1, slurm-23-02-7-1; cons_res gone at slurm-23-11-0-1), so
the rule runs only when the manifest's slurm.min_version is below 23.11.
"""
ID = "sbatch-gpus-select-plugin"
SEVERITY = "warning"
SCOPE = "preset"
DESCRIPTION = ("With slurm.min_version below 23.11, --gpus, --gpus-per-task, --gpus-per-socket, --cpus-per-gpu and "
               "--mem-per-gpu are refused on clusters still on select/cons_res: ask with --gpus-per-node.")
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "#SBATCH --gpus-per-node=8", "#SBATCH --gpus-per-task=8"),
       "preset.yaml": ("replace", '    gpus-per-node: "8"\n', '    gpus-per-task: "8"\n')}

# The options gres.c refuses without select/cons_tres (tres_per_job/socket/task, cpus_per_tres, mem_per_tres).
NEEDS_CONS_TRES = ("gpus", "gpus-per-socket", "gpus-per-task", "cpus-per-gpu", "mem-per-gpu")
CONS_RES_REMOVED = (23, 11)


def _release(text) -> tuple[int, int] | None:
    parts = str(text).split(".")
    if len(parts) < 2 or not all(p.isascii() and p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def check(target):
    manifest, script = target.preset.manifest, target.script
    slurm = (manifest or {}).get("slurm") if isinstance(manifest, dict) else None
    claimed = _release(slurm.get("min_version")) if isinstance(slurm, dict) else None
    if script is None or claimed is None or claimed >= CONS_RES_REMOVED:
        return
    for name in NEEDS_CONS_TRES:
        for option in script.parsed.get(name):
            yield (script.display, option.line, option.col,
                   f"--{name} needs select/cons_tres on Slurm {slurm.get('min_version')} to 23.02 (this preset's "
                   "min_version): a cluster on select/cons_res rejects the job (gres.shtml; cons_res left in 23.11); "
                   "with one task per node ask with --gpus-per-node")
