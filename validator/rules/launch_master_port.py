"""A fixed rendezvous port (29500) collides when jobs share a node; derive it from the job id, within 1024-32767."""
import re
from validator.rules.base import GOOD_BATCH, bad_batch, launcher_commands
ID = "launch-master-port"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A fixed rendezvous port (29500) collides when jobs share a node; derive it from the job id, within 1024-32767.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export MASTER_PORT=$(( 20000 + SLURM_JOB_ID % 12000 ))", "export MASTER_PORT=29500")


_PORT = re.compile(r":(\d+)$")


def _judge(value):
    port = int(value)
    if not 1024 <= port <= 32767:
        return f"port {port} is outside 1024-32767 (32768 and up is the ephemeral range)"
    return f"fixed port {port} collides when two jobs share a node; derive it from SLURM_JOB_ID"


def check(target):
    script = target.script
    for a in script.shell.assignments:
        if a.name == "MASTER_PORT" and a.value and a.value.isdigit():
            yield (script.display, a.line, a.col, _judge(a.value))
    for command in launcher_commands(script.shell):
        for option in ("--master-port", "--master_port"):
            word = command.option(option)
            if word is not None and word.value and word.value.isdigit():
                yield (script.display, word.line, word.col, _judge(word.value))
        word = command.option("--rdzv-endpoint", "--rdzv_endpoint")
        if word is not None and word.value and _PORT.search(word.value):
            yield (script.display, word.line, word.col, _judge(_PORT.search(word.value).group(1)))
