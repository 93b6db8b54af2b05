"""Pick a real-world corpus from fetched repository snapshots (round two of docs/real-world.md).

    python3 bench/real_world_pick.py --mirrors /work/.mirror --out DIR [--cap 10] [--seed 28]

Each snapshot is a bare git directory MIRRORS/<owner>+<repo>/repo (or a work tree whose git directory
is MIRRORS/<owner>+<repo>/repo/.git); a snapshot named in --repos that cannot be read is said on
stderr. A candidate is a file at the
snapshot's HEAD that has an '#SBATCH -' directive line at the start of a line and a line that launches
work (srun, mpirun, torchrun, python, a container runtime, ./program ...), is not documentation or
source of another language (by its suffix), and is under 200 kB. Repositories already judged in
docs/real-world-judgements.tsv and docs/real-world-holdout-judgements.tsv, those of round two's list
docs/real-world-r2-corpus.tsv, those of any --exclude-list file, and SchedMD/slurm itself, are skipped;
--repos reads only the snapshots named (round four: only its new snapshots). From each repository
at most --cap candidates are drawn with random.Random(seed), so no repository dominates. Writes
DIR/MANIFEST.tsv (repository, path, commit), the scripts under
DIR/<owner>/<repo>/<path>, an empty DIR/<owner>/<repo>/.git, and every folder named 'logs' that the
repository has at that commit (empty). The held-out quarter is drawn afterwards by
bench/real_world_holdout.py.
"""
from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUDGED = [ROOT / "docs" / "real-world-judgements.tsv", ROOT / "docs" / "real-world-holdout-judgements.tsv",
          ROOT / "docs" / "real-world-r2-corpus.tsv"]
# Round nineteen on: a job's output or log (.log, .out, .err) and a README are text that quotes job
# scripts, not job scripts (rounds seventeen and eighteen drew a notes .log and four READMEs).
NOT_A_SCRIPT = re.compile(r"\.(md|markdown|rst|txt|py|ipynb|html|shtml|yaml|yml|json|j2|jinja|tmpl|tpl|in|tex|c|cpp|f90|go|rs|js|ts"
                          r"|log|out|err)$|(^|/)README[^/]*$", re.I)
# `./wrf.exe` counts too: before round fifty-one the `\b` in front of `\./` never matched (no word
# character before a '.' at a line's start or after a blank), so a job that runs `./prog` in the batch
# shell was drawn only when another launch word was in it (round forty-six's judge found it).
# Round four hundred and twenty-four's drawer: jobs whose only launch is `uv run train.py`, `conda run -n env ...`
# or `bash scripts/train.sh` were never drawn (nor `sh run.sh`); a project runner's `run` and a shell given a
# script count from round four hundred and twenty-five on.
LAUNCHES = re.compile(r"^\s*[^#\n]*(?:\b(srun|mpirun|mpiexec|torchrun|deepspeed|accelerate|python3?|apptainer|"
                      r"singularity|julia|Rscript)\b|(?<![\w./])\./[\w.+-]+"
                      r"|\b(?:uv|conda|mamba|micromamba|poetry|pixi|pdm)\s+run\b"
                      r"|(?<![\w./-])(?:bash|sh)\s+(?:-\w+\s+)*[^\s;|&]+\.sh\b)", re.M)
DIRECTIVE = r"^#SBATCH[[:space:]]+-"


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True,
                          errors="replace").stdout


def used_repositories(extra: list[Path] = ()) -> set[str]:
    used = {"SchedMD/slurm"}
    for path in [*JUDGED, *extra]:
        # every first column but a header's (real-world-r13-holdout.tsv has none: its first line is a row)
        used |= {line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()
                 if line and not line.startswith("repository\t")}
    return used


def candidates(git_dir: Path, head: str) -> list[str]:
    # -z: a file name may hold blanks or newlines (two snapshots of round eight's pool had them)
    listed = [entry for entry in git(git_dir, "grep", "-z", "-l", "-I", "-E", DIRECTIVE, head, "--").split("\0") if entry]
    out = []
    for path in sorted(entry.split(":", 1)[1] for entry in listed):
        if NOT_A_SCRIPT.search(path):
            continue
        text = git(git_dir, "show", f"{head}:{path}")
        if len(text) <= 200_000 and LAUNCHES.search(text):
            out.append(path)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirrors", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--cap", type=int, default=10)
    p.add_argument("--seed", type=int, default=28)
    p.add_argument("--exclude-list", type=Path, action="append", default=[],
                   help="a further tsv whose first column names repositories to skip (repeatable)")
    p.add_argument("--repos", nargs="+", help="read only these snapshots (owner/name)")
    args = p.parse_args(argv)
    draw, used, rows = random.Random(args.seed), used_repositories(args.exclude_list), []
    read = set()
    for snapshot in sorted(args.mirrors.glob("*+*/repo")):
        repo = snapshot.parent.name.replace("+", "/", 1)
        # most snapshots are the git directory itself; some arrive as a work tree whose git directory
        # is repo/.git (round twenty-four): both are read
        git_dir = snapshot / ".git" if (snapshot / ".git" / "objects").is_dir() else snapshot
        if repo in used or (args.repos and repo not in args.repos):
            continue
        head = git(git_dir, "rev-parse", "HEAD").strip()
        read.add(repo)  # found: said once, here or not at all
        if not head:
            print(f"{repo}: no HEAD in {git_dir}, not read", file=sys.stderr)
            continue
        found = candidates(git_dir, head)
        rows += [(repo, path, head, git_dir) for path in sorted(draw.sample(found, min(args.cap, len(found))))]
    for repo, path, head, git_dir in rows:
        target = args.out / repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (args.out / repo / ".git").mkdir(exist_ok=True)
        target.write_bytes(subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{head}:{path}"],
                                          capture_output=True, check=True).stdout)
    for repo, head, git_dir in {(r, h, g) for r, _, h, g in rows}:
        for folder in git(git_dir, "ls-tree", "-z", "-r", "-d", "--name-only", head).split("\0"):
            if folder == "logs" or folder.endswith("/logs"):
                (args.out / repo / folder).mkdir(parents=True, exist_ok=True)
    for repo in sorted(set(args.repos or ()) - read - used):
        print(f"{repo}: no snapshot under {args.mirrors}, not read", file=sys.stderr)
    (args.out / "MANIFEST.tsv").write_text("".join(f"{r}\t{p_}\t{h}\n" for r, p_, h, _ in rows), encoding="utf-8")
    print(f"{len(rows)} scripts from {len({r for r, *_ in rows})} repositories", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
