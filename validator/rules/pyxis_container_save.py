"""--container-save must name a file, not a folder (pyxis refuses a trailing '/'; older pyxis lost files there).

Premise (pyxis and enroot, not Slurm): pyxis runs `enroot export -f -o PATH` with the path given
(pyxis_slurmstepd.c, enroot_container_export(), pyxis 0.24.0). A path ending in '/' is a folder:
pyxis 0.21.0 and later refuse it at once, "--container-save: target is a directory" (args.c,
spank_option_container_save(); commit f2b5da4, "Reject container-save arguments with a trailing
'/'", after enroot#215), so the step fails before it runs; earlier pyxis handed the folder to enroot,
where it lost a user's files. Any other name is written as a squashfs whatever its suffix (enroot
4.1.2, src/runtime.sh, runtime::export: the name is the output file; an existing one is replaced only
with -f). So the default profile reports folder paths ('/', '.', '..', '~' at the end); the strict
profile also expects the .sqsh suffix (a policy: the cache's files say what they are).
Holds for: every Slurm release; the trailing-'/' refusal for pyxis 0.21.0 and later.
"""

ID = "pyxis-container-save"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("--container-save must name a file, not a folder (pyxis 0.21+ refuses a trailing '/'; older pyxis "
               "lost files there); the strict profile also expects the .sqsh suffix.")
GOOD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --ntasks=1 --container-image=ghcr.io#org/img:1 --container-save=/shared/img.sqsh true\n"}
BAD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --ntasks=1 --container-image=ghcr.io#org/img:1 --container-save=/shared/images/ true\n"}


def _folder(path: str) -> bool:
    return path.endswith(("/", "/.", "/..")) or path in (".", "..", "~") or path.endswith("/~")


def check(target):
    for command in target.script.shell.named("srun"):
        word = command.option("--container-save")
        if word is None:
            continue
        text = word.value if word.value is not None else word.raw.strip("\"'")
        if _folder(text):
            yield (target.script.display, word.line, word.col,
                   f"--container-save={text} names a folder: pyxis 0.21 and later refuse it ('target is a directory'), "
                   "older pyxis lost files there; name the .sqsh file")
        elif target.strict and not text.endswith(".sqsh"):
            yield (target.script.display, word.line, word.col,
                   f"--container-save={text} does not end in .sqsh: enroot writes a squashfs there; name it .sqsh "
                   "so the cache says what it holds")
