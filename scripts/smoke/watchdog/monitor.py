"""On the batch host, one per stage that runs ranks: ends a stage whose progress stopped and names
who held it up.

    python -m smoke.watchdog.monitor --run-dir OUT --stage NAME --mode MODE --shell-pid PID

job-lib's smoke_stage starts it in the background before the stage's srun and stops it (SIGTERM)
when srun returns. Progress is any rank's heartbeat advancing (watch/<stage>/*.beat) or a new
iteration line in the stage's log (Megatron and the functional loop print one per step). After
SMOKE_HANG_AFTER seconds without progress (SMOKE_HANG_FIRST before the first: the first step
compiles, warms up and builds Megatron's dataset), it asks every node's agent for evidence, waits
at most SMOKE_HANG_EVIDENCE seconds for it, judges (smoke.watchdog.judge), writes hang.json, and
ends the stage: SIGINT twice to the stage's srun (srun then cancels the step, slurmstepd kills its
tasks on every node), SIGKILL when srun is still there 30 s later. A healthy run never reaches the
stall: the watchdog only acts on no progress at all, and its own failure is written to
watch/<stage>/monitor.json, which the verdict reports as a WARN.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time

from smoke import runfolder, slurm, vocab
from smoke.runfolder import Unreadable
from smoke.watchdog import layout
from smoke.watchdog.judge import judge

ITERATION = re.compile(rb"\biteration\s+\d+\s*/\s*\d+")
POLL_S = 2.0
SRUN_EXIT_WAIT_S = 30.0
MAX_LOG_CHUNK = 4 * 2**20


def setting(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 6 else default


class Progress:
    """Counts progress events: heartbeat steps that advanced, iteration lines that appeared."""

    def __init__(self, run_dir: str, watch: str, log: str | None):
        self.run_dir, self.watch, self.log = run_dir, watch, log
        self.steps: dict[str, int] = {}
        self.offset = 0
        self.tail = b""
        self.events = 0

    def poll(self) -> int:
        """New progress events since the last poll."""
        new = 0
        for name in runfolder.list_dir(self.run_dir, self.watch, ".beat")[:8192]:
            try:
                text = runfolder.read_text(self.run_dir, f"{self.watch}/{name}", limit=256) or ""
            except Unreadable:
                continue
            head = text.split()
            if head and head[0].isdigit() and len(head[0]) <= 12:
                step = int(head[0])
                if step > self.steps.get(name, 0):
                    new += 1
                    self.steps[name] = step
        if self.log:
            try:  # the log is in the run folder, which code in the image can write: read it like any file there
                chunk = runfolder.read_from(self.run_dir, self.log, self.offset, MAX_LOG_CHUNK) or b""
            except Unreadable:
                chunk = b""
            if chunk:
                self.offset += len(chunk)
                text = self.tail + chunk
                cut = text.rfind(b"\n") + 1
                new += len(ITERATION.findall(text[:cut]))
                self.tail = text[cut:][-4096:]
        self.events += new
        return new


def srun_children(shell_pid: int) -> list[int]:
    """The stage's srun: the batch shell's child named srun (a pipeline's elements are its children)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read(4096).decode(errors="replace")
        except OSError:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2:].split()
        if comm == "srun" and len(fields) > 1 and fields[1] == str(shell_pid):
            found.append(int(entry))
    return found


def end_stage(shell_pid: int) -> str:
    pids = srun_children(shell_pid)
    if not pids:
        return "no srun of the stage found (it had ended)"
    for sig in (signal.SIGINT, signal.SIGINT):  # twice within a second: srun cancels the step (srun.1)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        time.sleep(0.3)
    deadline = time.monotonic() + SRUN_EXIT_WAIT_S
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{p}") for p in pids):
            return "step cancelled through srun"
        time.sleep(0.5)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return f"srun still running {SRUN_EXIT_WAIT_S:.0f} s after the cancel: killed"


def collect(run_dir: str, watch: str, nodes: list[str], wait_s: float) -> tuple[set[str], dict, dict]:
    """Waits for every node's evidence (at most wait_s): published agents, evidence, flight recorders."""
    deadline = time.monotonic() + wait_s
    while True:
        published = {n[:-len(".agent.json")] for n in runfolder.list_dir(run_dir, watch, ".agent.json")}
        evidence = {}
        for node in nodes:
            try:
                evidence[node] = runfolder.read_json(run_dir, f"{watch}/{layout.evidence_file(node)}", missing_ok=True)
            except Unreadable:
                evidence[node] = None
        if all(evidence.get(n) for n in published & set(nodes)) and published or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    flight = {}
    for name in runfolder.list_dir(run_dir, watch, ".fr.json")[:8192]:
        match = layout.RANK_FILE.fullmatch(name)
        if match:
            try:
                value = runfolder.read_json(run_dir, f"{watch}/{name}")
            except Unreadable:
                continue
            if isinstance(value, dict) and "entries" in value:
                flight[int(match["rank"])] = value
    return published, evidence, flight


def watch(args, watch_rel: str, status: dict) -> int:
    after, first = setting("SMOKE_HANG_AFTER", 90), setting("SMOKE_HANG_FIRST", 600)
    evidence_wait = setting("SMOKE_HANG_EVIDENCE", 20)
    progress = Progress(args.run_dir, watch_rel, runfolder.stage_log(args.stage))
    last = time.monotonic()
    while True:
        time.sleep(POLL_S)
        if progress.poll():
            last = time.monotonic()
        limit = after if progress.events else first
        if time.monotonic() - last < limit:
            continue
        stalled_at = last
        nodes = slurm.allocation() or []
        runfolder.write_json(os.path.join(args.run_dir, watch_rel, layout.REQUEST), {"id": 1, "t": time.time()})
        published, evidence, flight = collect(args.run_dir, watch_rel, nodes, evidence_wait)
        decision = judge(nodes, published, evidence, cuda=not vocab.on_cpu(args.mode), flight=flight)
        decided = time.monotonic()
        result = {"stage": args.stage, "limit_s": limit, "first_step": not progress.events,
                  "progress_events": progress.events, "stalled_s": round(decided - stalled_at, 1),
                  "answered": sorted(n for n, e in evidence.items() if e), **decision}
        print(f"smoke: watchdog: stage {args.stage} made no progress for {limit} s: "
              + (", ".join(f"{c['node']} rank {c['rank']} ({c['layer']})" if c["rank"] is not None
                           else f"{c['node']} ({c['layer']})" for c in decision["culprits"])
                 or f"job-wide: {decision['job_wide']}") + "; ending the stage", flush=True)
        runfolder.write_json(os.path.join(args.run_dir, layout.HANG), result)
        status.update(state="stall handled")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # job-lib stops the monitor once srun is gone: finish first
        result["ended"] = end_stage(args.shell_pid)
        result["ended_s"] = round(time.monotonic() - stalled_at, 1)
        runfolder.write_json(os.path.join(args.run_dir, layout.HANG), result)
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--stage", required=True)
    parser.add_argument("--mode", choices=vocab.MODES, default="full")
    parser.add_argument("--shell-pid", type=int, required=True)
    args = parser.parse_args(argv)
    if not layout.STAGE.fullmatch(args.stage):
        print(f"watchdog: stage {args.stage[:40]!r} is not a stage name", file=sys.stderr)
        return 2
    watch_rel = layout.stage_dir(args.stage)
    status_path = os.path.join(args.run_dir, watch_rel, "monitor.json")
    status = {"state": "watching", "started": time.time(), "pid": os.getpid()}

    def stop(*_):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    try:
        os.makedirs(os.path.join(args.run_dir, watch_rel), exist_ok=True)
        runfolder.write_json(status_path, status)
        watch(args, watch_rel, status)
    except SystemExit:
        if status["state"] == "watching":
            status["state"] = "stage ended"
    except Exception as exc:  # noqa: BLE001 - the watchdog's own failure is a WARN, never the stage's end
        status.update(state="failed", error=f"{type(exc).__name__}: {str(exc)[:300]}")
        print(f"smoke: watchdog for stage {args.stage} failed ({type(exc).__name__}: {exc}); the stage goes on "
              "without it", file=sys.stderr, flush=True)
    try:
        runfolder.write_json(status_path, status)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
