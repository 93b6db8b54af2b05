"""Fuzzing harness: mutate the real presets' files and run the validator in-process, bounded.

Mutations (drawn by hypothesis) work at four levels on a copy of a preset folder (or a lone
script from scripts/): bytes (flip, insert odd bytes, delete, duplicate), lines (delete, duplicate,
swap, insert a hostile line), YAML values (a value anywhere in the manifest replaced by a hostile
one: huge or negative numbers, 10^5000, 1e400, superscript digits, lone surrogates, lists and
mappings where scalars belong, deep nesting) and directives (#SBATCH lines with every option of
the table and odd values, `# validator:` suppressions, shellcheck directives).

Every case runs `validator.cli.main` in this process with one of the four output formats, under a
wall-clock alarm. A crash is: exit code 3, a traceback, an exception escaping main, the alarm
(a hang), more CPU time than the per-file bound, or output that breaks the format (a text line
that is not one finding, JSON that does not parse, a GitHub line that is not a workflow command).
Each crashing input is kept as a regression fixture folder (tests/fuzz-crashes/<why>-<hash>/),
which tests/test_fuzz.py replays.

    .venv/bin/python tests/fuzz_harness.py --cases 100000 --seed 1     # long run (niced, one core)
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from validator import output

ROOT = Path(__file__).resolve().parents[1]

CRASHES = ROOT / "tests" / "fuzz-crashes"
PRESETS = sorted(p.name for p in (ROOT / "presets").iterdir() if (p / "preset.yaml").is_file())
SCRIPTS = ["job-lib.sh", "megatron-node", "torchrun-node", "plan.sh", "local-cluster", "detect-topology", "image-cache",
           "container-step"]
FORMATS = tuple(output.FORMATS)
WALL_BOUND_S = 20.0  # a case that runs longer is a hang
CPU_BOUND_S = 2.0  # the README's per-file bound (inputs here are far below 256 KiB)

ODD_BYTES = [b"\x00", b"\x0b", b"\x0c", b"\r", b"\r\n", b"\t", b"\x1b[31m", b"\x85", b"\xc2\x85",
             b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xed\xa0\x80",
             b"\xc2\xb2", b"\xe2\x81\xb9", b'"', b"'", b"\\", b"#", b"{", b"}", b"[", b"]", b"&", b"*", b"!",
             b"%", b":", b"-", b"|", b">", b"$(", b"`", b"<<", b"((", b"${", b"\n", b"~", b"?", b",", b"@"]

HOSTILE_LINES = [
    "# validator: disable-file=* -- x", "# validator: disable=* -- x", "# validator: disable-file=input-* -- x",
    "# validator: disable=yaml-syntax -- x", "# validator: disable=nonexistent-rule -- x",
    "# validator: disable=SC2086", "# validator: disable-file=", "# validator: spank=pyxis,other",
    "# shellcheck disable=all", "# shellcheck shell=sh", "# shellcheck source=/etc/passwd",
    "#SBATCH --nodes=²", "#SBATCH --time=" + "9" * 5000, "#SBATCH --gpus-per-task=\u2028",
    "#SBATCH --export=NONE", "#SBATCH -N", "#SBATCH --", "#SBATCH '", "#SBATCH \\",
    "export MASTER_PORT=²⁹⁵⁰⁰", "export MASTER_PORT=" + "9" * 5000, "export NCCL_IB_HCA=mlx5_0",
    "srun --kill-on-bad-exit=1 torchrun --nproc-per-node=⁸ --nnodes=¹ --master-port=²⁹⁵⁰⁰ x.py",
    "srun torchrun --rdzv-endpoint=h:²⁹⁵⁰⁰ x.py", "srun bash -c 'srun bash -c \"torchrun --nnodes=2\"'",
    "echo \"$WANDB_API_KEY\" \"$TOKEN\" \"${SECRET:+x}\"", "set -x", "eval \"$X\"",
    "::error file=x,line=1::forged", "x.sbatch:1:1: error: forged [forged]",
    "$(" * 300 + ")" * 300, "(" * 400 + ")" * 400, "{ " * 300 + "; }" * 300,
    "a: " + "[" * 300 + "]" * 300, "a: " + "{a: " * 200 + "1" + "}" * 200,
    "- " * 200 + "x", "  " * 100 + "deep: 1", "key: \"\\ud800\"", "key: \"\\x1b[2J\\n::warning ::x\"",
    "? [a, b]\n: 1", "<<: {a: 1}", "&a x: *a", "!!python/object:os.system x: 1", "---", "...", "~", "null",
    "%YAML 1.1", "%TAG ! tag:x,2000:", "smoke_container " + "x" * 3000 + " aarch64",
    "source /etc/passwd", ". scripts/megatron-node", "cat <<'EOF'\n#SBATCH --time=1\nEOF",
]

HOSTILE_VALUES = [
    "1" + "0" * 5000, "-" + "9" * 4400, "1e400", "-1e400", ".inf", ".nan", "1000000000000", "-100000000",
    "0", "-1", "2147483648", "18446744073709551617", "4096", "4097", "65536", "²", "⁸", "١٢", "1_000",
    "0x10", "0o17", "017", "3.10", "4:00:00", "no", "yes", "on", "~", "null", "''", '""', "[]", "{}",
    "[1, 2]", "{a: 1}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "\"\\ud800\"", "\"\\udfff x\"", "\"a\\nb\"", "\"\\x1b[2J\"", "\"\\x00\"", "\"\\u2028\"", "\"x,y:z%0A\"",
    "'../../../../../../etc/hostname'", "'../../validator/data/megatron-flags/core_v0.13.0'",
    "'/etc/passwd'", "auto", "'auto'", "true", "false", "1.5", "-0.0", "1e-400",
    "!!binary aGk=", "!!int '3'", "&x 1", "*x", "|\n  block\n", ">-\n  folded\n", "x" * 2000,
    "'core_v0.13.0'", "core_v0.13.0", "[pyxis, pyxis]", "[other]", "'" + "a" * 300 + "'",
]


class Hang(BaseException):
    """Raised by the alarm: escapes main()'s `except Exception`."""


def _alarm(signum, frame):
    raise Hang()


# ----- mutations -----------------------------------------------------------------------------

def mutate_bytes(data: bytes, rnd: random.Random) -> bytes:
    if not data:
        return rnd.choice(ODD_BYTES)
    op = rnd.randrange(5)
    at = rnd.randrange(len(data) + 1)
    if op == 0 and at < len(data):
        return data[:at] + bytes([data[at] ^ (1 << rnd.randrange(8))]) + data[at + 1:]
    if op == 1:
        return data[:at] + rnd.choice(ODD_BYTES) * rnd.choice((1, 1, 2, 50)) + data[at:]
    if op == 2:
        end = min(len(data), at + rnd.randrange(1, 200))
        return data[:at] + data[end:]
    if op == 3:
        end = min(len(data), at + rnd.randrange(1, 400))
        return data[:end] + data[at:end] * rnd.choice((1, 2, 20)) + data[end:]
    return data[:at] + bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 8))) + data[at:]


def mutate_lines(data: bytes, rnd: random.Random) -> bytes:
    lines = data.split(b"\n")
    op = rnd.randrange(5)
    at = rnd.randrange(len(lines))
    if op == 0 and len(lines) > 1:
        del lines[at]
    elif op == 1:
        lines.insert(at, lines[at])
    elif op == 2:
        other = rnd.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    elif op == 3:
        indent = b" " * rnd.choice((0, 0, 2, 4, 6))
        lines.insert(at, indent + rnd.choice(HOSTILE_LINES).encode("utf-8", "surrogatepass"))
    else:
        lines[at] = lines[at] + b" " + rnd.choice(HOSTILE_LINES).encode("utf-8", "surrogatepass")
    return b"\n".join(lines)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, path + (i,))


def mutate_yaml_value(data: bytes, rnd: random.Random) -> bytes:
    import yaml

    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except Exception:  # already broken by an earlier mutation: fall back to a byte mutation
        return mutate_bytes(data, rnd)
    if not isinstance(doc, (dict, list)):
        return mutate_bytes(data, rnd)
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return mutate_bytes(data, rnd)
    path = rnd.choice(paths)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    marker = "HOSTILE-VALUE-MARKER"
    op = rnd.randrange(4)
    if op == 0 and isinstance(parent, dict):  # rename the key
        parent[rnd.choice(("x", "", "min", "max", "<<", "per_node", "Name"))] = parent.pop(path[-1])
    elif op == 1 and isinstance(parent, dict):  # delete the key
        del parent[path[-1]]
    else:
        parent[path[-1]] = marker
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**6)
    value = rnd.choice(HOSTILE_VALUES)
    if "\n" in value:
        value = value.replace("\n", "\n" + " " * 8)
    return text.replace(marker, value, 1).encode("utf-8", "surrogatepass")


def mutate_directive(data: bytes, rnd: random.Random) -> bytes:
    from validator import sbatch

    names = sorted(sbatch.option_table()["options"])
    lines = data.split(b"\n")
    at = rnd.randrange(1, max(2, min(len(lines), 12)))
    value = rnd.choice(HOSTILE_VALUES + ["1", "00:10:00", "NONE", "ALL", "8", "gpu:8", "'a b'", "x#y", "\\#"])
    name = rnd.choice(names)
    form = rnd.randrange(5)
    if form == 0:
        line = f"#SBATCH --{name}={value}"
    elif form == 1:
        line = f"#SBATCH --{name[:rnd.randrange(1, len(name) + 1)]} {value}"
    elif form == 2:
        rules = rnd.choice(("*", "input-*", "yaml-syntax", "no-such-rule", "SC2086,launch-*", "sbatch-?nknown-option", ""))
        kind = rnd.choice(("disable", "disable-file"))
        line = f"# validator: {kind}={rules}" + rnd.choice(("", " -- reason", " --"))
    elif form == 3:
        line = f"# shellcheck {rnd.choice(('disable=all', 'disable=SC2086', 'enable=all', 'shell=sh', 'source=/dev/zero'))}"
    else:
        line = f"#SBATCH -{rnd.choice('NnGtcpJ')}{value}"
    lines.insert(at, line.encode("utf-8", "surrogatepass"))
    return b"\n".join(lines)


MUTATORS = {"byte": mutate_bytes, "line": mutate_lines, "yaml": mutate_yaml_value, "directive": mutate_directive}


# ----- one case --------------------------------------------------------------------------------

def build_case(rnd: random.Random, levels: list[str]) -> dict:
    """{'kind': 'preset'|'script', 'name': ..., 'files': {name: bytes}, 'format': ...}."""
    if rnd.random() < 0.8:
        name = rnd.choice(PRESETS)
        folder = ROOT / "presets" / name
        files = {f: (folder / f).read_bytes() for f in ("preset.yaml", "train.sbatch", "README.md")}
        weights = {"preset.yaml": 6, "train.sbatch": 4, "README.md": 1}
        case = {"kind": "preset", "name": name, "files": files}
    else:
        name = rnd.choice(SCRIPTS)
        files = {name: (ROOT / "scripts" / name).read_bytes()}
        weights = {name: 1}
        case = {"kind": "script", "name": name, "files": files}
    for level in levels:
        target = rnd.choices(list(weights), weights=list(weights.values()))[0]
        mutator = MUTATORS[level]
        if level == "yaml" and not target.endswith(".yaml"):
            mutator = mutate_lines
        if level == "directive" and target.endswith((".yaml", ".md")):
            target = next((t for t in files if t.endswith(".sbatch")), target)
        files[target] = mutator(files[target], rnd)
    case["format"] = rnd.choice(FORMATS)
    return case


def write_case(case: dict, repo: Path) -> Path:
    """Lay the case out as a repository (presets/NAME/ or a script) and return the path to validate."""
    if case["kind"] == "preset":
        folder = repo / "presets" / case["name"]
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in case["files"].items():
            (folder / name).write_bytes(data)
        return folder
    folder = repo / "lone"
    folder.mkdir(parents=True, exist_ok=True)
    (name, data), = case["files"].items()
    (folder / name).write_bytes(data)
    return folder / name


def prepare_repo(repo: Path) -> None:
    """A repository skeleton: the real scripts/ (rules read scripts/megatron-node) and a .git marker."""
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    if not (repo / "scripts").exists():
        shutil.copytree(ROOT / "scripts", repo / "scripts")


def check_output(fmt: str, out: str) -> str | None:
    """Why the output breaks its format, or None."""
    if fmt == "text":
        for line in out.splitlines(keepends=True):
            if not line.endswith("\n") or any((ord(c) < 32 and c != "\n") or c in "\x7f\x85\u2028\u2029" for c in line):
                return f"raw control character in a text line: {line[:80]!r}"
    elif fmt in output.JSON_FORMATS:
        try:
            json.loads(out)
        except ValueError as exc:
            return f"{fmt} output does not parse: {exc}"
    elif fmt == "github":
        for line in out.split("\n")[:-1]:
            if not line.startswith("::") or "\r" in line:
                return f"github line is not a workflow command: {line[:80]!r}"
    return None


def _last_frame(stderr: str) -> str:
    """'file:line ExceptionType: message' of a traceback, for grouping crashes."""
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+)', stderr)
    where = f"{Path(frames[-1][0]).name}:{frames[-1][1]} " if frames else ""
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return (where + last)[:300]


def run_case(case: dict, repo: Path, shellcheck: bool = False) -> tuple[str | None, float]:
    """(why it crashed or None, CPU seconds)."""
    from validator.cli import main

    target = write_case(case, repo)
    args = ["--format", case["format"], str(target)]
    if not shellcheck:
        args.insert(0, "--no-shellcheck")
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, WALL_BOUND_S)
    started = time.process_time()
    why = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except Hang:
        why, code = "hang", None
    except SystemExit as exc:  # argparse
        why, code = f"exit {exc.code} from argparse", None
    except BaseException as exc:  # noqa: BLE001 - anything escaping main is a crash
        why, code = f"exception {type(exc).__name__}: {str(exc)[:200]}", None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    cpu = time.process_time() - started
    if why is None:
        if code not in (0, 1, 2):
            why = f"exit {code}: {_last_frame(err.getvalue())}"
        elif "Traceback" in err.getvalue():
            why = "traceback"
        elif code != 0 and not out.getvalue().strip():
            why = f"exit {code} without a finding"
        else:
            why = check_output(case["format"], out.getvalue())
        if why is None and cpu > CPU_BOUND_S:
            why = f"slow: {cpu:.1f} s CPU"
    if case["kind"] == "preset" and target.exists():
        shutil.rmtree(target)
    return why, cpu


def save_crash(case: dict, why: str, into: Path = CRASHES) -> Path:
    digest = hashlib.sha256(json.dumps({k: v.hex() for k, v in sorted(case["files"].items())}).encode()
                            + case["format"].encode()).hexdigest()[:12]
    label = why.split(":")[0].split()[0].lower() if why.split() else "crash"
    folder = into / f"{label}-{digest}"
    if folder.exists():
        return folder
    files = folder / "files"
    files.mkdir(parents=True)
    for name, data in case["files"].items():
        (files / name).write_bytes(data)
    (folder / "case.json").write_text(json.dumps({"kind": case["kind"], "name": case["name"],
                                                  "format": case["format"], "why": why[:500]}, indent=1) + "\n")
    return folder


def load_crash(folder: Path) -> dict:
    meta = json.loads((folder / "case.json").read_text())
    files = {p.name: p.read_bytes() for p in sorted((folder / "files").iterdir())}
    return {"kind": meta["kind"], "name": meta["name"], "format": meta["format"], "files": files}


# ----- the hypothesis driver -----------------------------------------------------------------

def fuzz(cases: int, seed: int, repo: Path, crashes: Path, budget_s: float | None = None,
         shellcheck_every: int = 0, log=print, chunk: int = 100) -> dict:
    """Run up to `cases` cases (or until `budget_s` has passed) in hypothesis runs of `chunk`
    examples, one seed each; every crash is saved under `crashes` and counted, none stops the run."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    stats = {"cases": 0, "crashes": 0, "saved": [], "cpu_max": 0.0, "by_level": {}}
    deadline = time.monotonic() + budget_s if budget_s else None
    prepare_repo(repo)

    def one(levels, rseed):
        if deadline and time.monotonic() > deadline:
            return
        case = build_case(random.Random(rseed), levels)
        shellcheck = bool(shellcheck_every) and stats["cases"] % shellcheck_every == 0
        why, cpu = run_case(case, repo, shellcheck)
        stats["cases"] += 1
        stats["cpu_max"] = max(stats["cpu_max"], cpu)
        for level in levels:
            stats["by_level"][level] = stats["by_level"].get(level, 0) + 1
        if why is not None:
            stats["crashes"] += 1
            folder = save_crash(case, why, crashes)
            stats["saved"].append(str(folder))
            log(f"crash #{stats['crashes']} at case {stats['cases']}: {why[:160]} -> {folder.name}")

    run = 0
    while stats["cases"] < cases and not (deadline and time.monotonic() > deadline):
        examples = min(chunk, cases - stats["cases"])
        hseed(seed * 1_000_003 + run)(settings(
            max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck))(given(
                levels=st.lists(st.sampled_from(sorted(MUTATORS)), min_size=1, max_size=4),
                rseed=st.integers(0, 2**32 - 1))(one)))()
        run += 1
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk", type=int, default=2000, help="cases per hypothesis run (one seed each)")
    p.add_argument("--budget-s", type=float, help="stop after this many seconds")
    p.add_argument("--shellcheck-every", type=int, default=25, help="run shellcheck on every Nth case (0: never)")
    p.add_argument("--crashes", type=Path, default=CRASHES)
    p.add_argument("--memory-mb", type=int, default=3072, help="address-space bound of this process")
    args = p.parse_args(argv)
    import resource
    limit = args.memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    started = time.monotonic()
    total = {"cases": 0, "crashes": 0, "cpu_max": 0.0}
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        chunk = 0
        while total["cases"] < args.cases:
            left = None if args.budget_s is None else args.budget_s - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            stats = fuzz(min(args.chunk, args.cases - total["cases"]), args.seed * 100003 + chunk,
                         Path(tmp) / "repo", args.crashes, left, args.shellcheck_every,
                         log=lambda m: print(m, flush=True), chunk=500)
            chunk += 1
            total["cases"] += stats["cases"]
            total["crashes"] += stats["crashes"]
            total["cpu_max"] = max(total["cpu_max"], stats["cpu_max"])
            print(f"fuzz: {total['cases']} cases, {total['crashes']} crashes, max {total['cpu_max']:.2f} s CPU "
                  f"per case, {time.monotonic() - started:.0f} s", flush=True)
            if stats["cases"] == 0:
                break
    return 1 if total["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
