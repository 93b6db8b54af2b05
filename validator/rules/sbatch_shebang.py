"""sbatch refuses a script whose first line is not a '#!' interpreter line.

Premise: sbatch stops with "This does not look like a batch script. The first line must start with
#!" (src/sbatch/sbatch.c at slurm-22-05-0-1 and slurm-26-05-1-1). Holds for: 22.05-26.05.
An interpreter other than bash (#!/bin/sh) is no defect: slurmstepd execs the script with the
interpreter its '#!' line names, and a POSIX sh script runs as written there (bashisms under
#!/bin/sh are shellcheck's SC3xxx). Bash is our presets' policy: that finding is reported in the
strict profile only (presets, --strict). A file whose '#!' comes after text other than blank lines
and comments (notes, a README, a record's header) quotes a job script: not reported; so is a text
with no '#!' at all whose #SBATCH lines come after prose (a README's lines to paste, a report); nor a
submitter or job generator with no '#!' (base.is_submitter: it runs sbatch or writes a job's #SBATCH lines
with a here-document, and has no directive sbatch would read): it is run with bash, not given to sbatch
(round one hundred and twenty-five: `make_run_file() { cat > $1.sh <<%EOF%` ... `sbatch ${name}.sh`).
A '#!' line that runs sbatch (`#!/usr/bin/sbatch`, so that `./job.sh` submits it) is reported in both profiles:
slurmstepd execs the batch script, the kernel hands it to the interpreter its '#!' line names, and sbatch submits
the file again from inside the job, whose body bash never runs; the next job does the same (round 560's recall
note; measured on the local cluster, Slurm 22.05.8: each job's output was "Submitted batch job N+1", six jobs in
20 s, named slurm_script, and the body's line was never written).
"""
from validator.rules.base import is_submitter
ID = "sbatch-shebang"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("The script must start with a '#!' line (sbatch refuses it otherwise); the strict profile also "
               "expects bash.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#SBATCH --time=00:05:00\necho ok\n"}


def _header_only(above: list[str]) -> bool:
    """Blank lines and comments above the '#!' line (a licence header, a stray empty line): a job
    script meant to be submitted as it is, which sbatch refuses. Other text above it (notes, a
    README's prose, a record's metadata, a rule of '=') makes the file a text that quotes a job
    script: nobody submits it as it is (rounds nine and seventeen: 4 of 4 such findings judged
    false; the 3 true ones had a licence header or a blank line above)."""
    return all(not line.strip() or line.lstrip().startswith("#") for line in above)


def check(target):
    script = target.script
    first = script.lines[0] if script.lines else ""
    if script.source.bom:
        yield (script.display, 1, 1, "a UTF-8 byte order mark before '#!': sbatch refuses the file; save it without BOM")
        return
    odd = next((i for i, ch in enumerate(first) if ord(ch) > 127), None) if first.startswith("#!") else None
    if odd is not None:
        yield (script.display, 1, odd + 1, f"non-ASCII character {first[odd]!r} (U+{ord(first[odd]):04X}) in the '#!' line: "
               "the kernel looks for that interpreter or option and the job fails at once")
        return
    if script.embedded_from > 1 and script.lines[script.embedded_from - 1].startswith("#!"):
        if _header_only(script.lines[:script.embedded_from - 1]):
            yield (script.display, 1, 1, f"no '#!' on line 1 (the job script's '#!' is on line {script.embedded_from}): "
                   "sbatch refuses the file as it is; the '#!' line must come first")
    elif not first.startswith("#!"):
        if not script.quotes_job_text and not is_submitter(script):
            yield (script.display, 1, 1, "no '#!' line: sbatch refuses a batch script without one")
    elif script.interpreter == "sbatch":  # `#!/usr/bin/sbatch`, `#!/usr/bin/env sbatch` (model.interpreter)
        yield (script.display, 1, 1, "the '#!' line runs sbatch: submitted with sbatch, the job's script is run "
               "through sbatch again, so each job submits the next and the body never runs; start it with #!/bin/bash")
    elif "bash" not in first and target.strict:
        yield (script.display, 1, 1, f"interpreter '{first[2:].strip()}' is not bash; presets are bash scripts")
