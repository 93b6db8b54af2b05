"""The run folder's contract (docs/run-folder.md) and its one reader and writer (smoke.runfolder):
regular files only, no link followed, never blocking, bounded, written by temp file and rename."""
import json
import os
import re
import threading

import pytest

from conftest import ROOT
from smoke import runfolder

DOC = ROOT / "docs" / "run-folder.md"


def documented() -> set[str]:
    names = set()
    for line in DOC.read_text().splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            names.add(match.group(1))
    return names


def constants() -> set[str]:
    values = {v for k, v in vars(runfolder).items() if k.isupper() and isinstance(v, str)}
    return {v + "/" if k.endswith("_DIR") or v in (runfolder.HOME, runfolder.TENSORBOARD) else v
            for k, v in vars(runfolder).items() if k.isupper() and isinstance(v, str) and v in values}


def test_every_file_of_the_run_folder_is_documented_and_every_documented_one_exists():
    assert documented() - {"<stage>.log"} == constants()
    assert runfolder.stage_log("probe") == "probe.log"  # <stage>.log


def test_the_documented_writers_and_readers_name_real_code():
    text = DOC.read_text()
    for module in re.findall(r"`(smoke\.[a-z_.]+)`", text):
        path = ROOT / "scripts" / (module.replace(".", "/") + ".py")
        package = ROOT / "scripts" / module.replace(".", "/") / "__init__.py"
        assert path.exists() or package.exists(), module
    for function in re.findall(r"job-lib `(smoke_[a-z_]+)`", text):
        assert f"{function}()" in (ROOT / "scripts" / "job-lib.sh").read_text(), function


def test_a_link_is_never_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("outside")
    run = tmp_path / "run"
    run.mkdir()
    (run / "probe.json").symlink_to(secret)
    with pytest.raises(runfolder.Unreadable, match="a link"):
        runfolder.read_text(str(run), "probe.json")
    (run / "preflight").symlink_to(tmp_path)  # a folder on the way
    with pytest.raises(runfolder.Unreadable, match="not a folder of the run folder"):
        runfolder.read_text(str(run), "preflight/secret")
    assert runfolder.list_dir(str(run), "functional") == []


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "probe.json")
    done = []
    worker = threading.Thread(target=lambda: done.append(pytest.raises(runfolder.Unreadable, runfolder.read_json,
                                                                          str(tmp_path), "probe.json")))
    worker.start()
    worker.join(5)
    assert done, "the reader blocked on a FIFO"


def test_reports_are_bounded_and_nan_is_refused(tmp_path):
    (tmp_path / "a.json").write_text('{"x": NaN}')
    with pytest.raises(runfolder.Unreadable, match="not JSON"):
        runfolder.read_json(str(tmp_path), "a.json")
    with open(tmp_path / "big.json", "wb") as handle:
        handle.truncate(runfolder.MAX_JSON + 1)
    with pytest.raises(runfolder.Unreadable, match="more than"):
        runfolder.read_json(str(tmp_path), "big.json")
    with open(tmp_path / "big.log", "wb") as handle:
        handle.write(b"x" * 10 + b"tail")
    assert runfolder.read_text(str(tmp_path), "big.log", limit=4) == "tail"


def test_writes_replace_a_link_or_fifo_instead_of_writing_through_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    victim.chmod(0o600)
    run = tmp_path / "run"
    run.mkdir()
    (run / "drain.sh").symlink_to(victim)
    os.mkfifo(run / "exclude.txt")
    runfolder.write_text(str(run / "drain.sh"), "#!/bin/sh\n", mode=0o755)
    runfolder.write_json(str(run / "exclude.txt"), {"a": 1})
    assert victim.read_text() == "keep" and oct(victim.stat().st_mode & 0o777) == "0o600"
    assert not (run / "drain.sh").is_symlink() and (run / "drain.sh").stat().st_mode & 0o777 == 0o755
    assert json.loads((run / "exclude.txt").read_text()) == {"a": 1}
    assert sorted(p.name for p in run.iterdir()) == ["drain.sh", "exclude.txt"]  # no temporary file left


def test_a_log_is_not_appended_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "localize.log").symlink_to(victim)
    with pytest.raises(OSError):
        runfolder.open_log(str(tmp_path / "localize.log"))
    assert victim.read_text() == "keep"
