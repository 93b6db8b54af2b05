"""A hard-coded address as the rendezvous host: the job works only on the node that has it.

Premise: a literal address or host name as the rendezvous host exists on one cluster only; the job's
first node is $SLURM_JOB_NODELIST's. Holds for: every Slurm release (no Slurm behaviour involved).
"""
import re

from validator.rules.base import GOOD_BATCH, bad_batch

ID = "launch-rdzv-host"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A hard-coded IP address as the rendezvous host (MASTER_ADDR, --master_addr, --rdzv-endpoint): the "
               "job works only when Slurm happens to give it that node; take the first host of the allocation.")
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch('export MASTER_ADDR=${hosts%%$\'\\n\'*}', "export MASTER_ADDR=10.0.0.12")

_IP = r"(?:[0-9]{1,3}\.){3}[0-9]{1,3}"
_TEXT = re.compile(r"(?:\bMASTER_ADDR=|--(?:master[_-]addr|main[_-]process[_-]ip)[= ]+|rdzv[_-]endpoint[= ]+)"
                   r"[\"']?(" + _IP + r")\b")
_LOCAL = ("127.", "0.0.0.0")


def check(target):
    script = target.script
    for number, line in enumerate(script.parsed.lines, start=1):
        if line.lstrip().startswith("#"):
            continue
        for match in _TEXT.finditer(line):
            if match.group(1).startswith(_LOCAL):
                continue
            yield (script.display, number, match.start(1) + 1,
                   f"rendezvous host {match.group(1)} is hard-coded: other allocations do not have it; use the first "
                   "host of $SLURM_JOB_NODELIST (scontrol show hostnames)")
            break
