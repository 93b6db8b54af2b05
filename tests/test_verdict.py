"""The verdict turns a run folder into PASS / WARN / FAIL with the reason."""
import json
import shutil

import pytest

from conftest import FIXTURES, ROOT
import importlib.util

spec = importlib.util.spec_from_file_location("verdict", ROOT / "scripts" / "verdict.py")
verdict = importlib.util.module_from_spec(spec)
spec.loader.exec_module(verdict)
LOGS = FIXTURES / "runtime"


def run_dir(tmp_path, log=None, stages="preflight 0\nmegatron 0\n"):
    (tmp_path / "stages.txt").write_text(stages)
    if log:
        shutil.copy(LOGS / log, tmp_path / "megatron.log")
    return tmp_path


def judge(tmp_path, mode="full", preset="h100-ib-8port"):
    code = verdict.main(["--run-dir", str(tmp_path), "--preset", str(ROOT / "presets" / preset), "--mode", mode])
    return code, json.loads((tmp_path / "verdict.json").read_text())


def test_healthy_megatron_run_passes(tmp_path):
    code, result = judge(run_dir(tmp_path, "megatron-healthy.log"))
    assert (code, result["verdict"]) == (0, "PASS")
    tflops = next(c for c in result["checks"] if c["check"] == "tflops_per_gpu")
    assert tflops["detail"].startswith("median 406.0")  # iteration 1 (start-up) dropped


def test_slow_run_fails_with_the_number(tmp_path):
    code, result = judge(run_dir(tmp_path, "megatron-slow.log"))
    assert (code, result["verdict"]) == (1, "FAIL")
    assert any("expected >= 250" in c["detail"] for c in result["checks"] if c["state"] == "FAIL")


def test_nan_loss_fails(tmp_path):
    code, result = judge(run_dir(tmp_path, "megatron-nan.log"))
    assert result["verdict"] == "FAIL" and any(c["check"] == "loss" and c["state"] == "FAIL" for c in result["checks"])


def test_failed_stage_fails(tmp_path):
    code, result = judge(run_dir(tmp_path, stages="preflight 1\n"))
    assert code == 1 and result["verdict"] == "FAIL"


@pytest.mark.parametrize("mode", ["full", "functional"])
def test_no_training_evidence_is_never_a_pass(tmp_path, mode):
    code, result = judge(run_dir(tmp_path), mode=mode)
    assert (code, result["verdict"]) == (1, "FAIL")


def test_missing_run_folder_could_not_run(tmp_path):
    assert verdict.main(["--run-dir", str(tmp_path / "nope"), "--preset", "x"]) == 2
