"""The hostile corpus (tests/hostile/cases/, written by tests/hostile/make_cases.py): every case gives
its expected exit code and first line of output, on every output format, with no traceback, within
a wall-clock bound, and leaves no shellcheck process behind. Cases that need what git cannot hold
(links, FIFOs, undecodable file names) build it in `setup`."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from validator import output

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "hostile" / "cases"
BASE = ROOT / "tests" / "fixtures" / "ok" / "example"
FORMATS = tuple(output.FORMATS)
WALL_BOUND_S = 30

# Test doubles of a broken shellcheck (a real one cannot be made to fail this way on purpose).
FAKES = {
    "fake-silent": "#!/bin/sh\nexit 1\n",  # exit code 1 (findings) but no output at all
    "fake-garbage": "#!/bin/sh\necho 'not json'\nexit 1\n",
}


class _Hang(BaseException):
    pass


def load_case(folder: Path) -> dict:
    meta = json.loads((folder / "case.json").read_text())
    meta["folder"] = folder
    return meta


def _path(text: str) -> str:
    """A path argument; 'b:HEX' is a file name given as bytes (an undecodable one)."""
    return os.fsdecode(bytes.fromhex(text[2:])) if text.startswith("b:") else text


def _build(case: dict, tmp: Path) -> Path:
    repo, outside = tmp / "repo", tmp / "outside"
    shutil.copytree(case["folder"] / "files", repo, symlinks=True)
    (repo / ".git").mkdir()
    outside.mkdir()
    for fake, text in FAKES.items():
        path = tmp / fake
        path.write_text(text)
        path.chmod(0o755)

    def place(text: str) -> str:
        return text.replace("{outside}", str(outside))

    for op, *args in case.get("setup", []):
        target = repo / args[0] if args else None
        if target is not None and op not in ("outside-file", "write-bytes-name"):
            target.parent.mkdir(parents=True, exist_ok=True)
        if op == "outside-preset":
            shutil.copytree(BASE, outside / "example")
        elif op == "outside-file":
            (outside / args[0]).write_text(args[1])
        elif op == "symlink":
            if os.path.lexists(target):
                target.unlink()
            os.symlink(place(args[1]), target)
        elif op == "write":
            target.write_text(args[1])
            target.chmod(0o755)
        elif op == "fifo":
            os.mkfifo(target)
        elif op == "mkdir":
            target.mkdir()
        elif op == "remove":
            target.unlink()
        elif op == "write-bytes-name":
            (repo / os.fsdecode(bytes.fromhex(args[0]))).write_text(args[1])
        elif op == "copy-base-preset":
            shutil.copytree(BASE, target)
        else:
            raise ValueError(op)
    return repo


def run_case(case: dict, fmt: str) -> tuple[int, str]:
    """(exit code, first line of stdout, else 'stderr: ' and the first line of stderr)."""
    from validator.cli import main

    args = [_path(a) for a in case["args"]]
    if args[:1] != ["plan"]:
        args = ["--format", fmt] + ([] if case.get("shellcheck") else ["--no-shellcheck"]) + args
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        repo = _build(case, Path(tmp))
        env = {k: v.replace("{fake-silent}", str(Path(tmp) / "fake-silent"))
                   .replace("{fake-garbage}", str(Path(tmp) / "fake-garbage")) for k, v in case.get("env", {}).items()}
        saved_env = {k: os.environ.get(k) for k in env}
        import validator.shellcheck as shellcheck
        saved_cpu = shellcheck.CPU_BASE_S
        shellcheck.CPU_BASE_S = case.get("cpu_base_s", saved_cpu)  # a bound hit in 1 s, not 3 s
        cwd = os.getcwd()
        out, err = io.StringIO(), io.StringIO()
        old = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_Hang()))
        signal.alarm(WALL_BOUND_S)
        try:
            os.environ.update(env)
            os.chdir(repo)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(args)
                except SystemExit as exc:  # argparse's usage errors
                    code = exc.code
        except _Hang:
            pytest.fail(f"{case['folder'].name}: no result within {WALL_BOUND_S} s")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            shellcheck.CPU_BASE_S = saved_cpu
            os.chdir(cwd)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _writable(Path(tmp))
        stdout, stderr = out.getvalue(), err.getvalue()
    assert "Traceback" not in stderr, stderr
    if fmt in output.JSON_FORMATS and stdout and args[:1] != ["plan"]:
        json.loads(stdout)
    if args[:1] != ["plan"] and stdout:
        from fuzz_harness import check_output
        assert check_output(fmt, stdout) is None, check_output(fmt, stdout)
    first = stdout.split("\n", 1)[0] if stdout else "stderr: " + (stderr.split("\n", 1)[0] if stderr else "")
    if stdout and fmt in output.JSON_FORMATS and args[:1] != ["plan"]:  # the first finding, not '[' or '{'
        data = json.loads(stdout)
        if fmt == "sarif":
            data = [{"uri": r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                     "message": r["message"]["text"]} for r in data["runs"][0]["results"]]
        first = json.dumps(data[0], sort_keys=True) if data else "(no findings)"
    return code, first.replace(tmp, "{tmp}")[:300]


def _writable(tmp: Path) -> None:
    for folder, dirs, _ in os.walk(tmp):
        for d in dirs:
            path = Path(folder) / d
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRWXU)


ALL = sorted(p for p in CASES.iterdir() if (p / "case.json").is_file()) if CASES.is_dir() else []


def test_the_corpus_covers_every_class():
    assert len(ALL) >= 100
    classes = {p.name.split("-")[0] for p in ALL}
    assert classes >= {"c1", "c2", "c3", "c4", "c5", "c6", "c7"}


@pytest.mark.parametrize("folder", ALL, ids=[p.name for p in ALL])
def test_hostile_case(folder):
    case = load_case(folder)
    own = case.get("format", "text")
    code, first = run_case(case, own)
    assert (code, first) == (case["exit"], case["first_line"])
    if case["args"][:1] == ["plan"] or case.get("one_format"):
        return
    for fmt in FORMATS:  # the same verdict on every format
        if fmt != own:
            assert run_case(case, fmt)[0] == case["exit"], fmt


def _shellchecks() -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,comm="], capture_output=True, text=True).stdout
    return {int(line.split()[0]) for line in out.splitlines() if line.split()[-1] == "shellcheck"
            and int(line.split()[1]) == os.getpid()}


def test_no_shellcheck_left_behind():
    """After every case above (shellcheck bound hit, fake shellchecks, crashes) no child is left."""
    assert not _shellchecks()


# ----- what only a separate process shows: signals, closed pipes, undecodable arguments ---------

DEEP = "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho " + '"$(echo ' * 40 + "x" + ')"' * 40 + "\n"


def _validator(args, tmp_path, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "validator", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _shellchecks_on(marker: str) -> list[int]:
    """pids of shellcheck processes whose command line names `marker` (a file of this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"shellcheck") and any(marker.encode() in part for part in cmdline):
            found.append(int(entry.name))
    return found


def _wait_for(predicate, seconds=20.0):
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_no_shellcheck_outlives_the_validator(tmp_path, how):
    (tmp_path / ".git").mkdir()
    script = tmp_path / "deep-nesting.sbatch"
    script.write_text(DEEP)
    proc = _validator([str(script)], tmp_path)
    try:
        assert _wait_for(lambda: _shellchecks_on(str(script))), "shellcheck never started"
        proc.send_signal(how)
        proc.wait(timeout=30)
        assert _wait_for(lambda: not _shellchecks_on(str(script)), 10), "shellcheck left running"
        assert b"Traceback" not in proc.stderr.read()
        assert proc.returncode != 0
    finally:
        for pid in _shellchecks_on(str(script)):  # only what this test started
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_closed_output_pipe_ends_quietly(tmp_path):
    (tmp_path / ".git").mkdir()
    script = tmp_path / "many.sbatch"
    script.write_text("#!/bin/bash\n" + "#SBATCH --tme=1\n" * 3000)
    proc = _validator(["--no-shellcheck", str(script)], tmp_path)
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `| head -1` does
    proc.wait(timeout=60)
    err = proc.stderr.read()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err[-500:]
    assert proc.returncode == 1


def test_undecodable_file_name_argument(tmp_path):
    (tmp_path / ".git").mkdir()
    name = os.fsdecode(b"job\xff\n.sbatch")
    (tmp_path / name).write_text("#!/bin/bash\n#SBATCH --tme=1\n")
    for fmt in FORMATS:
        proc = _validator(["--format", fmt, name], tmp_path)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and b"Traceback" not in err, err
        assert b"\xff" not in out and b"\n.sbatch" not in out, out[:300]  # escaped, never raw
        assert b"xff" in out or b"%FF" in out, out[:300]
