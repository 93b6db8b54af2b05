"""A fixed rendezvous port (29500) collides when jobs share a node; derive it from the job id, within 1024-32767."""
import re
from validator.rules.base import GOOD_BATCH, as_int, bad_batch, is_decimal, launcher_commands
ID = "launch-master-port"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A fixed rendezvous port (29500) collides when jobs share a node; derive it from the job id, within 1024-32767.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export MASTER_PORT=$(( 20000 + SLURM_JOB_ID % 12000 ))", "export MASTER_PORT=29500")


_PORT = re.compile(r":([0-9]+)$")
# A literal port in a launcher's arguments anywhere in the script, also inside a string
# (LAUNCHER="accelerate launch --main_process_port 29500 ..."): `--master_port 6000`, `:29500`
_TEXT = re.compile(r"(?:--(?:master|main)[_-](?:process[_-])?port[= ]+|rdzv[_-]endpoint[= ]+[^\s:]*:)([0-9]+)\b")


def _whole_nodes(script) -> bool:
    """--exclusive (no value): no other job shares the node, a fixed port cannot collide."""
    return any(not option.value for option in script.parsed.get("exclusive"))


def _judge(value):
    port = as_int(value, digits=6)
    if port is None or not 1024 <= port <= 32767:
        shown = value if port is not None else value[:12] + "..."
        return f"port {shown} is outside 1024-32767 (32768 and up is the ephemeral range)"
    return f"fixed port {port} collides when two jobs share a node; derive it from SLURM_JOB_ID"


def check(target):
    script = target.script
    if _whole_nodes(script):
        return
    found = list(_findings(script))
    reported = {line for _, line, _, _ in found}
    yield from found
    for number, line in enumerate(script.parsed.lines, start=1):
        if line.lstrip().startswith("#") or number in reported:
            continue
        for match in _TEXT.finditer(line):
            yield (script.display, number, match.start(1) + 1, _judge(match.group(1)))
            break


def _findings(script):
    used = {e.name for e in script.shell.expansions}
    for a in script.shell.assignments:
        if a.name == "MASTER_PORT" and is_decimal(a.value) and (a.exported or a.name in used):
            yield (script.display, a.line, a.col, _judge(a.value))
    for command in launcher_commands(script.shell):
        for option in ("--master-port", "--master_port"):
            word = command.option(option)
            if word is not None and is_decimal(word.value):
                yield (script.display, word.line, word.col, _judge(word.value))
        word = command.option("--rdzv-endpoint", "--rdzv_endpoint")
        if word is not None and word.value and _PORT.search(word.value):
            yield (script.display, word.line, word.col, _judge(_PORT.search(word.value).group(1)))
