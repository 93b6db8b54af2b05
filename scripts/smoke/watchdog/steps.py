"""The hang watchdog for localization's srun steps (smoke.localize.driver), on the batch host.

Each step is a stage of its own for the watchdog: its ranks beat into watch/<step>/ (the worker
calls smoke.watchdog.beat after joining and after every repeat), torchrun-node starts an agent on
each node. A step whose ranks have beaten and then made no progress for SMOKE_HANG_AFTER seconds
is judged as the stage monitor judges a stall (evidence from the agents, smoke.watchdog.judge) and
ended then, instead of after SMOKE_LOCALIZE_STEP_TIMEOUT; a step that never beat is still ended by
that time limit. What was found goes into localize.json's `stalls`; the node without a result is
named by localization as before, now with the watchdog's reason. Standard library only.
"""
from __future__ import annotations

import os
import time

from smoke import runfolder, vocab
from smoke.watchdog import layout
from smoke.watchdog.judge import judge
from smoke.watchdog.monitor import Progress, collect, setting


def enabled(env) -> bool:
    """SMOKE_WATCHDOG=0 turns every watchdog off; SMOKE_WATCH_STAGES lists `localize` by default."""
    stages = env.get("SMOKE_WATCH_STAGES", "probe megatron localize").split()
    return env.get("SMOKE_WATCHDOG", "1") != "0" and "localize" in stages


class StepWatch:
    """Watches localization's steps by name (the srun --job-name, a stage name: localize-node,
    localize-g3)."""

    def __init__(self, run_dir: str, mode: str):
        self.run_dir = run_dir
        self.after = setting("SMOKE_HANG_AFTER", 90)
        self.evidence_s = setting("SMOKE_HANG_EVIDENCE", 20)
        self.cuda = not vocab.on_cpu(mode)
        self.progress: dict[str, Progress] = {}
        self.last: dict[str, float] = {}
        self.stalls: list[dict] = []

    def env_for(self, step: str) -> dict:
        """What the step's tasks need to find their watch folder (torchrun-node, smoke.watchdog.beat)."""
        if not layout.STAGE.fullmatch(step):
            return {}
        folder = os.path.join(self.run_dir, layout.stage_dir(step))
        os.makedirs(folder, exist_ok=True)
        # the watchdog's own status, as a stage monitor writes it (the verdict's `watchdog <stage>` row)
        self._status(step, {"state": "watching", "started": time.time(), "pid": os.getpid(),
                            "by": "smoke.localize.driver"})
        self.progress[step] = Progress(self.run_dir, layout.stage_dir(step), None)
        self.last[step] = time.monotonic()
        return {"SMOKE_STAGE": step, "SMOKE_WATCH_DIR": folder, "SMOKE_OUT": self.run_dir}

    def stalled(self, step: str) -> bool:
        """The step's ranks beat once and then made no progress for SMOKE_HANG_AFTER seconds."""
        progress = self.progress.get(step)
        if progress is None:
            return False
        if progress.poll():
            self.last[step] = time.monotonic()
        return progress.events > 0 and time.monotonic() - self.last[step] >= self.after

    def examine(self, step: str, nodes: list[str]) -> dict:
        """Evidence from the nodes' agents, judged: who held the step up. Never raises: the watchdog's
        own failure is said in the record, the step is ended by its time limit's path anyway."""
        watch = layout.stage_dir(step)
        record = {"step": step, "asked": nodes, "limit_s": self.after,
                  "stalled_s": round(time.monotonic() - self.last.get(step, time.monotonic()), 1)}
        try:
            runfolder.write_json(os.path.join(self.run_dir, watch, layout.REQUEST), {"id": 1, "t": time.time()})
            published, evidence, flight = collect(self.run_dir, watch, nodes, self.evidence_s)
            record.update(judge(nodes, published, evidence, cuda=self.cuda, flight=flight))
        except Exception as exc:  # noqa: BLE001 - reported, never the end of localization
            record["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        self._status(step, {"state": "failed", "error": record["error"]} if "error" in record
                     else {"state": "stall handled"})
        self.stalls.append(record)
        return record

    def _status(self, step: str, status: dict) -> None:
        try:
            runfolder.write_json(os.path.join(self.run_dir, layout.stage_dir(step), "monitor.json"), status)
        except OSError:
            pass

    def culprits(self, step: str) -> dict[str, dict]:
        """node -> the watchdog's culprit record for a step it ended (the first per node)."""
        found: dict[str, dict] = {}
        for record in self.stalls:
            if record.get("step") == step:
                for culprit in record.get("culprits") or []:
                    if isinstance(culprit, dict) and isinstance(culprit.get("node"), str):
                        found.setdefault(culprit["node"], culprit)
        return found
