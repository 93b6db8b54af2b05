"""--container-save must name a .sqsh file (a folder path deleted a user's files, pyxis#151).

Premise (pyxis, not Slurm): --container-save writes a squashfs to the path given (a folder path lost
a user's files, NVIDIA/pyxis#151). Holds for: every Slurm release.
"""

ID = "pyxis-container-save"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "--container-save must name a .sqsh file (a folder path deleted a user's files, pyxis#151)."
GOOD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --ntasks=1 --container-image=ghcr.io#org/img:1 --container-save=/shared/img.sqsh true\n"}
BAD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --ntasks=1 --container-image=ghcr.io#org/img:1 --container-save=/shared/images/ true\n"}


def check(target):
    for command in target.script.shell.named("srun"):
        word = command.option("--container-save")
        if word is None:
            continue
        text = word.value if word.value is not None else word.raw.strip("\"'")
        if not text.endswith(".sqsh"):
            yield (target.script.display, word.line, word.col,
                   f"--container-save={text} is not a .sqsh file path; a folder here deletes files (pyxis#151)")
