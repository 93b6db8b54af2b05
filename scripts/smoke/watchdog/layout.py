"""Where the watchdog's files live in the run folder: watch/<stage>/ (docs/run-folder.md).

Every file here is written by code inside the job (a rank, an agent) and read by the monitor on the
batch host through smoke.runfolder's reader: bounded, no links followed, bad JSON refused.
"""
from __future__ import annotations

import re

from smoke.runfolder import HANG, WATCH_DIR  # noqa: F401 - the run folder's names live in one module

REQUEST = "request.json"  # the monitor's request for evidence: {"id": N, "t": epoch seconds}
STACK_SIGNAL_NAME = "SIGUSR1"  # what the agent sends a rank to dump its Python stacks (faulthandler)

# Stage names are job-lib's (preflight, probe, megatron, ...): a plain word, safe as a folder name.
STAGE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
RANK_FILE = re.compile(r"(?P<node>[A-Za-z0-9._-]{1,128})\.rank-(?P<rank>[0-9]{1,7})\.(?P<kind>json|beat|stack|fr\.json)")


def stage_dir(stage: str) -> str:
    return f"{WATCH_DIR}/{stage}"


def rank_file(node: str, rank: int, kind: str) -> str:
    """kind: json (the rank's record), beat (heartbeat), stack (faulthandler dumps), fr.json."""
    return f"{node}.rank-{rank}.{kind}"


def agent_file(node: str) -> str:
    return f"{node}.agent.json"


def evidence_file(node: str) -> str:
    return f"{node}.evidence.json"
