"""The verdict: combine the stages of one job into PASS, WARN or FAIL.

    python -m smoke.verdict --run-dir DIR --preset DIR --mode MODE

Reads the run folder (docs/run-folder.md) and the preset's expectations, writes verdict.json,
exclude.txt and drain.sh (each by temp file and rename) and prints a short table: every text that
comes from the run folder printed with control characters escaped and its length bounded.
Exit codes: 0 pass (or warn), 1 fail, 2 could not run.
"""
from __future__ import annotations

import argparse
import os
import sys

from smoke import manifest, runfolder, slurm, vocab
from smoke.verdict.rows import FAIL, Row, clip, overall, printable
from smoke.verdict.sections import collect, read_container, software
from smoke.verdict.suspects import gather, write_exclusions

MAX_ROWS = 400  # more rows than any job has checks: the rest is summarised in one row


def judge(run_dir: str, preset: str, mode: str) -> tuple[list[Row], list[dict]]:
    try:
        manifest_, problem = manifest.load(preset), ""
    except manifest.Unavailable as exc:
        manifest_, problem = None, str(exc)
    try:
        rows = collect(run_dir, mode, manifest_, problem)
    except Exception as exc:  # noqa: BLE001 - the verdict is promised on every way a job ends: never lose it
        rows = [Row("verdict", FAIL, f"the run folder could not be judged ({type(exc).__name__}: {str(exc)[:200]})")]
    if not rows:
        rows = [Row("job", FAIL, "no stage reported anything")]
    suspects, suspect_rows = gather(run_dir, manifest_ or {}, mode, slurm.allocation())
    rows += suspect_rows
    if len(rows) > MAX_ROWS:
        worst = overall(rows[MAX_ROWS - 1:])
        rows = rows[:MAX_ROWS - 1] + [Row("verdict", worst, f"{len(rows) - MAX_ROWS + 1} more row(s) not shown")]
    return rows, suspects


def emit(line: str) -> None:
    sys.stdout.write(printable(line) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--mode", choices=vocab.MODES, default="full")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.run_dir):
        print(f"verdict: no run folder {printable(args.run_dir)}", file=sys.stderr)
        return 2
    rows, suspects = judge(args.run_dir, args.preset, args.mode)
    result = overall(rows)
    job = os.environ.get("SLURM_JOB_ID")
    try:
        write_exclusions(args.run_dir, suspects, job)
    except OSError as exc:
        rows.append(Row("exclude.txt", FAIL, f"cannot write exclude.txt or drain.sh: {exc.strerror}"))
        result = FAIL
    payload = {"verdict": result, "mode": args.mode, "preset": os.path.basename(os.path.normpath(args.preset)),
               "job_id": job,
               "checks": [{"check": r.check, "state": r.state, "detail": r.detail} for r in rows],
               "suspects": suspects}
    try:
        container = read_container(args.run_dir)[0]
    except runfolder.Unreadable:
        container = None  # its FAIL row is already in the checks
    if container is not None:
        payload["container"] = container
    stack = software(args.run_dir)
    if stack:
        payload["software"] = stack
    path = os.path.join(args.run_dir, runfolder.VERDICT)
    try:
        runfolder.write_json(path, payload)
    except OSError as exc:
        print(f"verdict: cannot write {printable(path)}: {exc.strerror}", file=sys.stderr)
    width = max(len(printable(r.check)) for r in rows)
    for r in rows:
        emit(f"verdict: {printable(r.check):<{width}}  {r.state:4}  {r.detail}")
    if suspects:
        emit(f"verdict: {'node':<12}  {'layer':<12}  {'figure':>9}  {'peers':>9}  reason")
        for s in suspects:
            fig = "-" if s.get("figure") is None else f"{s['figure']:.3g}"
            med = "-" if s.get("peers_median") is None else f"{s['peers_median']:.3g}"
            emit(f"verdict: {s['node']:<12}  {s['layer']:<12}  {fig:>9}  {med:>9}  {s['reason']}")
        nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "N"
        exclude_file = os.path.join(args.run_dir, runfolder.EXCLUDE)
        emit(f"verdict: resubmit without them: sbatch --nodes {clip(nodes, 8)} --exclude=$(cat {exclude_file}) "
             f"presets/{payload['preset']}/train.sbatch   (drain commands for an operator: "
             f"{os.path.join(args.run_dir, runfolder.DRAIN)})")
    emit(f"verdict: {result} ({path})")
    sys.stdout.flush()
    return 1 if result == FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
