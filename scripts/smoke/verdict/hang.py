"""The hang watchdog's part of the verdict: hang.json (what the monitor decided after a stall) and
each watched stage's monitor.json (whether the watchdog itself ran). Both are run-folder files,
read through smoke.runfolder and checked like any other: the culprits go through the suspects'
checks (smoke.verdict.suspects.problem) like localization's.
"""
from __future__ import annotations

from smoke import runfolder
from smoke.runfolder import Unreadable, finite
from smoke.verdict.rows import FAIL, WARN, Row, clip
from smoke.watchdog import layout


def load(run_dir: str) -> dict | None:
    return runfolder.read_json(run_dir, layout.HANG, missing_ok=True)


def rows(run_dir: str) -> list[Row]:
    out: list[Row] = []
    for stage in runfolder.list_dir(run_dir, layout.WATCH_DIR)[:32]:
        if not layout.STAGE.fullmatch(stage):
            continue
        try:
            status = runfolder.read_json(run_dir, f"{layout.stage_dir(stage)}/monitor.json", missing_ok=True)
        except Unreadable as exc:
            out.append(Row(f"watchdog {stage}", WARN, f"its status is unreadable ({exc}): the stage ran unwatched?"))
            continue
        if status is None:
            out.append(Row(f"watchdog {stage}", WARN, "did not start (no monitor.json): the stage ran unwatched; "
                                                      f"see {runfolder.stage_log(stage)}"))
        elif status.get("state") == "failed":
            out.append(Row(f"watchdog {stage}", WARN, f"failed ({clip(status.get('error'), 200)}): the stage ran "
                                                      "unwatched from then on"))
    try:
        hang = load(run_dir)
    except Unreadable as exc:
        return out + [Row("hang", WARN, f"hang.json is unreadable ({exc}): what the watchdog found is lost")]
    if hang is None:
        return out
    stage = clip(hang.get("stage"), 32)
    limit, stalled = finite(hang.get("limit_s")), finite(hang.get("stalled_s"))
    when = f"no progress for {limit:.0f} s" if limit is not None else "no progress"
    took = f"; decided {stalled:.0f} s after the last progress" if stalled is not None else ""
    culprits = hang.get("culprits") if isinstance(hang.get("culprits"), list) else []
    if culprits:
        named = ", ".join(_who(c) for c in culprits[:8] if isinstance(c, dict))
        out.append(Row(f"hang {stage}", FAIL, f"{when}: held up by {named}{took}; the stage was ended "
                                              f"({clip(hang.get('ended'), 80) if hang.get('ended') else 'ending'})"))
    else:
        out.append(Row(f"hang {stage}", FAIL, f"{when}, job-wide: {clip(hang.get('job_wide'), 300)}{took}; no node "
                                              "is named"))
    return out


def _who(c: dict) -> str:
    rank = c.get("rank")
    where = clip(c.get("node"), 64) + (f" rank {rank}" if isinstance(rank, int) else "")
    return f"{where} ({clip(c.get('layer'), 16)})"


def suspects(run_dir: str) -> list[dict]:
    """The culprits of hang.json as suspects (checked by the caller like every other)."""
    try:
        hang = load(run_dir)
    except Unreadable:
        return []
    if not isinstance(hang, dict) or not isinstance(hang.get("culprits"), list):
        return []
    out = []
    for c in hang["culprits"][:64]:
        if not isinstance(c, dict):
            continue
        doing = c.get("doing") if isinstance(c.get("doing"), list) else []
        reason = f"stage {clip(hang.get('stage'), 32)} stalled: {clip(c.get('reason'), 200)}"
        if doing:
            reason += f"; at {clip(doing[0], 80)}"
        out.append({"node": c.get("node"), "layer": c.get("layer"), "figure": None, "peers_median": None,
                    "reason": reason})
    return out
