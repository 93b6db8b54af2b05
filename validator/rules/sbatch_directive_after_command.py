"""Slurm stops reading directives at the first command: later #SBATCH lines are ignored.

Premise: sbatch stops reading directives at the first line that is neither blank nor a comment
("Stop parsing script if not a comment", src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1);
later #SBATCH lines are ignored. Holds for: 22.05-26.05.
Not reported: #SBATCH lines inside text the script writes for another job (a heredoc, or a quoted
string over several lines that echo or printf writes to a file): they are that job's directives.
"""
ID = "sbatch-directive-after-command"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An #SBATCH line after the first command is silently ignored by Slurm."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\nset -euo pipefail\n#SBATCH --time=00:05:00\necho ok\n"}


def check(target):
    parsed = target.script.parsed
    # `sbatch <<EOF`, `cat > job.sh <<EOF`, `echo "#!/bin/bash
    # #SBATCH ..." > job.sh`: directives of another job that the script writes
    inside = target.script.shell.text_lines() if parsed.ignored_directives else set()
    for directive in parsed.ignored_directives:
        if directive.line in inside:
            continue
        yield (target.script.display, directive.line, 1,
               f"#SBATCH after the first command (line {parsed.first_command_line}) is ignored by Slurm; "
               "move it above")
