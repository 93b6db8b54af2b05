"""Precision of the validator on public sbatch scripts that nobody here wrote (docs/real-world.md).

    .venv/bin/python bench/real_world.py --corpus DIR [--validator-root CHECKOUT] [--unjudged]

DIR holds the scripts as DIR/<owner>/<repo>/<path> and DIR/MANIFEST.tsv (repository, path, commit;
one script a line). The scripts stay outside this repository. The judgements live in
docs/real-world-judgements.tsv: repository, path, line, rule, true|false, why. A finding is keyed by
(repository, path, line, rule). The validator runs once in the default profile and once with
--strict (the presets' profile); the table gives true/total per rule for each, plus the findings
that carry no judgement yet. --validator-root runs another checkout's validator (e.g. a worktree of
an older commit, for the "before" column). --judgements names another judgement file (round two:
docs/real-world-r2-judgements.tsv); --holdout names a list of held-out scripts (repository, path,
commit; docs/real-world-r2-holdout.tsv), and every table is then given twice, for the tuning part and
for the held-out part, each scored on its own.
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUDGEMENTS = ROOT / "docs" / "real-world-judgements.tsv"


def load_manifest(corpus: Path) -> list[tuple[str, str, str]]:
    rows = []
    with open(corpus / "MANIFEST.tsv", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                repo, path, commit = line.rstrip("\n").split("\t")
                rows.append((repo, path, commit))
    return rows


def load_judgements(path: Path = JUDGEMENTS) -> dict[tuple[str, str, int, str], tuple[bool, str]]:
    out = {}
    with open(path, encoding="utf-8") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            if not row or row[0].startswith("#") or row[0] == "repository":
                continue
            repo, path_, line, rule, verdict, why = row
            if verdict not in ("true", "false"):
                raise SystemExit(f"{path}: verdict must be true or false: {row}")
            out[(repo, path_, int(line), rule)] = (verdict == "true", why)
    return out


def load_holdout(path: Path) -> set[tuple[str, str]]:
    """(repository, path) of the held-out scripts; the header row and comments are skipped."""
    out = set()
    with open(path, encoding="utf-8") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            if row and not row[0].startswith("#") and row[0] != "repository":
                out.add((row[0], row[1]))
    return out


def run(corpus: Path, manifest, extra: list[str], validator_root: Path) -> tuple[list[dict], float]:
    files = [f"{repo}/{path}" for repo, path, _ in manifest]
    env = {**os.environ, "PYTHONPATH": str(validator_root)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "validator", "--format", "json", *extra, *files],
                          cwd=corpus, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"validator exited {proc.returncode}: {proc.stderr[-2000:]}")
    repos = sorted({repo for repo, _, _ in manifest}, key=len, reverse=True)
    findings = []
    for f in json.loads(proc.stdout):
        repo = next(r for r in repos if f["path"].startswith(r + "/"))
        f["repo"], f["file"] = repo, f["path"][len(repo) + 1:]
        findings.append(f)
    return findings, elapsed


def table(findings, judgements) -> dict[str, list[int]]:
    """rule -> [true, judged, unjudged]."""
    per = collections.defaultdict(lambda: [0, 0, 0])
    for f in findings:
        verdict = judgements.get((f["repo"], f["file"], f["line"], f["rule"]))
        row = per[f["rule"]]
        if verdict is None:
            row[2] += 1
        else:
            row[0] += verdict[0]
            row[1] += 1
    return per


def _pct(true, total):
    return f"{100 * true / total:.0f} %" if total else "-"


def summarise(name: str, per: dict[str, list[int]]) -> list[str]:
    groups = {"own rules": lambda r: not r.startswith("SC"), "shellcheck": lambda r: r.startswith("SC"),
              "everything": lambda r: True}
    lines = [f"## {name}", "", "| part | true | judged | precision | unjudged |", "|---|---:|---:|---:|---:|"]
    for label, pick in groups.items():
        t = sum(v[0] for r, v in per.items() if pick(r))
        j = sum(v[1] for r, v in per.items() if pick(r))
        u = sum(v[2] for r, v in per.items() if pick(r))
        lines.append(f"| {label} | {t} | {j} | {_pct(t, j)} | {u} |")
    lines += ["", "| rule | true | judged | precision | unjudged |", "|---|---:|---:|---:|---:|"]
    for rule, (t, j, u) in sorted(per.items(), key=lambda kv: (-kv[1][1] - kv[1][2], kv[0])):
        lines.append(f"| {rule} | {t} | {j} | {_pct(t, j)} | {u} |")
    return lines + [""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, type=Path)
    p.add_argument("--validator-root", type=Path, default=ROOT)
    p.add_argument("--judgements", type=Path, default=JUDGEMENTS)
    p.add_argument("--holdout", type=Path,
                   help="held-out scripts (repository, path, commit): score them apart from the rest")
    p.add_argument("--one-profile", action="store_true",
                   help="run only the default invocation (a validator from before the profiles existed)")
    p.add_argument("--unjudged", action="store_true", help="list the findings that carry no judgement")
    p.add_argument("--findings", action="store_true",
                   help="list every finding of the default profile with its judgement (a markdown table)")
    p.add_argument("--lost", action="store_true",
                   help="list true judgements that the default profile no longer reports at their line, "
                        "and recall")
    args = p.parse_args(argv)
    manifest = load_manifest(args.corpus)
    judgements = load_judgements(args.judgements)
    held = load_holdout(args.holdout) if args.holdout else set()
    unknown = held - {(r, p_) for r, p_, _ in manifest}
    if unknown:
        raise SystemExit(f"{args.holdout}: not in the corpus manifest: {sorted(unknown)[:3]}")
    parts = [("", lambda f: True)] if not held else [
        (" - tuning part", lambda f: (f["repo"], f["file"]) not in held),
        (" - held-out part", lambda f: (f["repo"], f["file"]) in held)]
    out = [f"corpus: {len(manifest)} scripts from {len({r for r, _, _ in manifest})} repositories"
           + (f", {len(held)} of them held out" if held else ""), ""]
    reported = {}
    runs = [("default profile", []), ("strict profile (--strict, what presets get)", ["--strict"])]
    for name, extra in runs[:1] if args.one_profile else runs:
        findings, elapsed = run(args.corpus, manifest, extra, args.validator_root)
        for label, pick in parts:
            mine = [f for f in findings if pick(f)]
            out += summarise(f"{name}{label}: {len(mine)} findings ({len(findings)} in all in {elapsed:.2f} s)",
                             table(mine, judgements))
        if args.unjudged:
            for f in findings:
                if (f["repo"], f["file"], f["line"], f["rule"]) not in judgements:
                    out.append(f"UNJUDGED\t{f['repo']}\t{f['file']}\t{f['line']}\t{f['rule']}\t{f['message']}")
        reported[name] = {(f["repo"], f["file"], f["line"], f["rule"]) for f in findings}
        if args.findings and not extra:
            out += ["| repository | path | line | rule | verdict | why |", "|---|---|---:|---|---|---|"]
            for key in sorted(reported[name]):
                ok, why = judgements.get(key, (None, "not judged"))
                verdict = "-" if ok is None else ("true" if ok else "false")
                out.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {verdict} | {why} |")
            out.append("")
    if args.lost:
        default, strict = (list(reported.values()) * 2)[:2]
        lost = [k for k, (ok, _) in judgements.items() if ok and k not in default]
        # A rule whose finding moved to another line of the same file (launch-strict-mode now names the srun,
        # not the line it once named) still reports the defect: it is "moved" when that finding is judged true.
        true_now = {(k[0], k[1], k[3]) for k in default if judgements.get(k, (False, ""))[0]}
        moved = {k for k in lost if (k[0], k[1], k[3]) in true_now}
        total = sum(ok for ok, _ in judgements.values())
        out.append(f"true judgements the default profile does not report at their line: {len(lost)} of {total} "
                   f"(of which {len(moved)} reported by the same rule at another line of the file and judged true "
                   f"there; the strict profile reports {sum(k in strict for k in lost)} at their line)")
        out.append(f"recall of true judgements: {total - len(lost)}/{total} at their line, "
                   f"{total - len(lost) + len(moved)}/{total} counting moved findings")
        where = {k: "moved" if k in moved else "strict" if k in strict else "none" for k in lost}
        out += [f"LOST\t{k[0]}\t{k[1]}\t{k[2]}\t{k[3]}\t{where[k]}" for k in sorted(lost)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
