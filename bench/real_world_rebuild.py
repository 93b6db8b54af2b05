"""Rebuild a judged real-world corpus from its list, out of fetched repository snapshots.

    python3 bench/real_world_rebuild.py --mirrors /work/.mirror --out DIR --list docs/real-world-r29-holdout.tsv
    python3 bench/real_world_rebuild.py --mirrors /work/.mirror --out DIR \
        --markdown docs/real-world.md --section "The corpus" --section "The held-out scripts"   # round one
    python3 bench/real_world_rebuild.py --mirrors /work/.mirror --list LIST --missing   # what to fetch first
    python3 bench/real_world_rebuild.py --mirrors /work/.mirror --out DIR --list docs/real-world-r557-holdout.tsv \
        --carrier hariharan-devarajan/jobspec-database   # rounds 455 on: the scripts a carrier keeps

With --carrier, every script is read from one carrier repository that keeps copies of other repositories' files
under data/OWNER/REPO/PATH (vsoch's Job Specification Database, rounds 455 on): the list names the origin
repository and path, and the carrier's commit.
A list names (repository, path, commit): a tsv (header row optional) or, for round one, the
three-column tables under the named headings of docs/real-world.md, whose commits are abbreviated.
Each script is written from its commit (not the snapshot's newest), with the layout
bench/real_world_pick.py writes: DIR/owner/name/path, an empty DIR/owner/name/.git (the validator's
repository root), the repository's logs/ folders at that commit, and DIR/MANIFEST.tsv. The corpora are
not kept in the repository (third-party text); this puts one back on a fresh machine.
Exit 0 when every script was written, 1 when a snapshot or a commit is missing (said per row), 2 on
a list it cannot read.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HEX = re.compile(r"^[0-9a-f]{7,40}$")


def git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True)


def read_tsv(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#") or line.startswith("repository\t"):
            continue
        cells = line.split("\t")
        if len(cells) < 3 or not HEX.match(cells[2]):
            raise ValueError(f"{path}:{number}:1: expected repository<TAB>path<TAB>commit")
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def read_markdown(path: Path, sections: list[str]) -> list[tuple[str, str, str]]:
    rows, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            inside = line.lstrip("#").strip() in sections
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if inside and len(cells) == 3 and HEX.match(cells[2]):
            rows.append((cells[0], cells[1], cells[2]))
    if not rows:
        raise ValueError(f"{path}: no (repository | path | commit) rows under {sections}")
    return rows


def snapshot(mirrors: Path, repo: str) -> Path | None:
    root = mirrors / repo.replace("/", "+", 1) / "repo"
    for git_dir in (root / ".git", root):  # some snapshots arrive as a work tree
        if (git_dir / "objects").is_dir():
            return git_dir
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirrors", required=True, type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--list", type=Path, action="append", default=[])
    p.add_argument("--markdown", type=Path)
    p.add_argument("--section", action="append", default=[])
    p.add_argument("--missing", action="store_true", help="print the repositories with no snapshot and stop")
    p.add_argument("--carrier", help="owner/name of a repository that keeps each script under data/OWNER/REPO/PATH")
    args = p.parse_args(argv)
    if not args.missing and args.out is None:
        p.error("--out is required unless --missing")
    try:
        rows = [row for path in args.list for row in read_tsv(path)]
        if args.markdown:
            rows += read_markdown(args.markdown, args.section)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"real_world_rebuild: {error}", file=sys.stderr)
        return 2
    def source(repo: str, path: str) -> tuple[str, str]:  # (the snapshot's repository, the path in it)
        return (args.carrier, f"data/{repo}/{path}") if args.carrier else (repo, path)

    missing = sorted({source(repo, path)[0] for repo, path, _ in rows if snapshot(args.mirrors, source(repo, path)[0]) is None})
    if args.missing:
        print("\n".join(missing))
        return 0
    written, failed = [], 0
    for repo, path, commit in rows:
        holder, inside = source(repo, path)
        git_dir = snapshot(args.mirrors, holder)
        if git_dir is None:
            print(f"{holder}: no snapshot under {args.mirrors}: {path} not written", file=sys.stderr)
            failed += 1
            continue
        full = git(git_dir, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
        blob = git(git_dir, "show", f"{commit}:{inside}") if full.returncode == 0 else full
        if blob.returncode != 0:
            print(f"{holder}: {inside} not at {commit} in the snapshot (is it older than the list?)", file=sys.stderr)
            failed += 1
            continue
        target = args.out / repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (args.out / repo / ".git").mkdir(exist_ok=True)
        target.write_bytes(blob.stdout)
        written.append((repo, path, full.stdout.decode().strip(), git_dir))
    for repo, commit, git_dir in {(r, c, g) for r, _, c, g in written}:
        prefix = source(repo, "")[1]  # the repository's own folder in a carrier ("data/OWNER/REPO/"), else ""
        folders = git(git_dir, "ls-tree", "-z", "-r", "-d", "--name-only", commit, *([prefix] if prefix else [])
                      ).stdout.decode(errors="replace")
        for folder in (f[len(prefix):] for f in folders.split("\0") if f.startswith(prefix)):
            if folder == "logs" or folder.endswith("/logs"):
                (args.out / repo / folder).mkdir(parents=True, exist_ok=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "MANIFEST.tsv").write_text("".join(f"{r}\t{p_}\t{c}\n" for r, p_, c, _ in written),
                                               encoding="utf-8")
    print(f"{len(written)} of {len(rows)} scripts written from "
          f"{len({r for r, *_ in written})} repositories", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
