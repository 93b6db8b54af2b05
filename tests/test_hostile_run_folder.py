"""Hostile run folders (issue 24): every stage, code inside the image included, can write the run
folder; the verdict, localization and drain.sh must hold whatever it holds. One test per class:
names outside the allocation, links, FIFOs, super-linear patterns, dropped or contradictory
suspects, non-finite figures, missing throughput, forged lines and escapes, lone surrogates, output
amplification, and settings that would be evaluated."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from smoke.localize import judge

LOGS = FIXTURES / "runtime"
PRESET = str(ROOT / "presets" / "h100-ib-8port")


def verdict(run, mode="full", nodelist="node[1-2]", preset=PRESET, timeout=60, extra_env=None):
    """The verdict as job-lib runs it: a process of its own, bounded in time (a hang fails the test)."""
    env = {**os.environ, "SLURM_JOB_NODELIST": nodelist, "SLURM_JOB_ID": "77", **(extra_env or {})}
    proc = subprocess.run([sys.executable, "-m", "smoke.verdict", "--run-dir", str(run), "--preset", preset,
                           "--mode", mode], capture_output=True, timeout=timeout, env=env)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-2000:]
    result = json.loads((run / "verdict.json").read_text())
    return proc, result


def probe_run(tmp_path, stages="preflight 0\nprobe 0\n"):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "stages.txt").write_text(stages)
    (tmp_path / "stopped-after").write_text("probe\n")
    return tmp_path


def preflight_report(run, host, hostname):
    (run / "preflight").mkdir(exist_ok=True)
    (run / "preflight" / f"{host[:40]}.json").write_text(json.dumps(
        {"host": host, "hostname": hostname, "checks": {}}))


def test_all_and_nodes_outside_the_allocation_never_reach_drain_sh(tmp_path):
    """A preflight report with host ALL plus one socket-fallback line gave `NodeName=ALL`; a
    localize.json naming 2,001 nodes gave 2,001 drain lines for a 2-node job."""
    run = probe_run(tmp_path, "preflight 0\nprobe 1\n")
    preflight_report(run, "node1", "node1")
    preflight_report(run, "ALL", "evil")
    (run / "probe.log").write_text((LOGS / "nccl-ib.log").read_text()
                                   + (LOGS / "nccl-socket-fallback.log").read_text().replace("0: node1:", "1: evil:"))
    (run / "localize.json").write_text(json.dumps({"ran": True, "why": "x", "rounds": 1, "steps": 1, "seconds": 1,
                                                   "suspects": [{"node": f"n{i}", "layer": "gpu", "figure": 1,
                                                                 "peers_median": 2, "reason": "r"} for i in range(2001)]}))
    proc, result = verdict(run)
    assert result["suspects"] == []
    drain = (run / "drain.sh").read_text()
    assert "scontrol" not in drain and (run / "exclude.txt").read_text() == ""
    assert result["verdict"] == "FAIL"
    assert any(c["check"] == "suspects" and "not a node of this job" in c["detail"] for c in result["checks"])


def test_more_than_half_of_what_remains_is_job_wide(tmp_path):
    run = probe_run(tmp_path)
    (run / "localize.json").write_text(json.dumps({"ran": True, "why": "x", "rounds": 1, "steps": 1, "seconds": 1,
                                                   "suspects": [{"node": f"node{i}", "layer": "gpu", "figure": 1,
                                                                 "peers_median": 2, "reason": "r"} for i in (1, 2, 3)]}))
    _, result = verdict(run, nodelist="node[1-4]")
    assert result["suspects"] == [] and (run / "exclude.txt").read_text() == ""
    assert any("3 of 4 nodes named: a job-wide cause" in c["detail"] for c in result["checks"])


@pytest.mark.parametrize("name", ["drain.sh", "exclude.txt", "verdict.json"])
def test_outputs_that_are_links_or_fifos_are_replaced_not_followed(tmp_path, name):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    victim.chmod(0o600)
    run = probe_run(tmp_path / "run")
    (run / name).symlink_to(victim)
    verdict(run)
    assert victim.read_text() == "keep" and victim.stat().st_mode & 0o777 == 0o600
    (run / name).unlink()
    os.mkfifo(run / name)
    verdict(run, timeout=30)  # a FIFO used to block the verdict forever
    assert (run / name).is_file()


@pytest.mark.parametrize("name", ["probe.json", "stages.txt", "localize.json", "probe.log", "preflight/node1.json"])
def test_fifos_and_links_in_inputs_are_unreadable_rows_not_hangs(tmp_path, name):
    run = probe_run(tmp_path / "run")
    (run / "preflight").mkdir(exist_ok=True)
    (run / name).unlink(missing_ok=True)
    os.mkfifo(run / name)
    proc, result = verdict(run, timeout=30)
    assert result["verdict"] == "FAIL" or any(c["state"] == "WARN" for c in result["checks"])


def test_the_root_cause_reader_is_linear(tmp_path):
    """A 22 KB failed-stage log with torchrun's header, many host/rank lines and no numeric exit code
    had not finished after 60 s (a cubic pattern); 64 MiB of it must be judged in seconds."""
    block = "0: Root Cause (first observed failure):\n" + "0:   host      : node1\n0:   rank      : 3\n" * 800
    run = probe_run(tmp_path, "preflight 0\nprobe 1\n")
    (run / "probe.log").write_text(block * 4 + "0:   exitcode  : x\n" + ("slurmstepd-" * 40000 + "\n") * 20
                                   + "NCCL INFO " * 100000 + "\n")
    proc, result = verdict(run, timeout=60)
    stage = next(c for c in result["checks"] if c["check"] == "stage probe")
    assert stage["detail"] == "exit code 1"


@pytest.mark.parametrize("suspect, why", [
    ({"node": "node 1", "layer": "gpu", "figure": 1.0, "peers_median": 2.0, "reason": "r"}, "not a Slurm node name"),
    ({"node": "node1", "layer": "GPU", "figure": 1.0, "peers_median": 2.0, "reason": "r"}, "layer 'GPU'"),
    ({"node": "node1", "layer": "gpu", "figure": 1e300, "peers_median": 2.0, "reason": "r"}, "not a finite number"),
    ({"node": "node1", "layer": "gpu", "figure": True, "peers_median": 2.0, "reason": "r"}, "not a finite number"),
])
def test_a_suspect_the_checks_refuse_is_said_never_a_pass(tmp_path, suspect, why):
    run = probe_run(tmp_path)
    (run / "localize.json").write_text(json.dumps({"ran": True, "why": "x", "rounds": 1, "steps": 1, "seconds": 1,
                                                   "suspects": [suspect]}))
    _, result = verdict(run)
    assert result["verdict"] == "FAIL" and result["suspects"] == []
    assert any(c["check"] == "suspects" and why in c["detail"] for c in result["checks"])
    assert not any(c["check"] == "localize" and "no node stands out" in c["detail"] for c in result["checks"])


@pytest.mark.parametrize("extra", [{"ran": False}, {"ran": True, "error": "stopped by signal 15"}])
def test_a_localize_json_that_contradicts_itself_names_nobody(tmp_path, extra):
    run = probe_run(tmp_path)
    (run / "localize.json").write_text(json.dumps({"why": "x", **extra, "suspects": [
        {"node": "node1", "layer": "gpu", "figure": 1.0, "peers_median": 2.0, "reason": "r"}]}))
    _, result = verdict(run)
    assert result["suspects"] == [] and "scontrol" not in (run / "drain.sh").read_text()
    assert any(c["check"] == "localize" and c["state"] == "WARN" and "not used" in c["detail"] for c in result["checks"])


def test_a_nan_report_does_not_hide_a_slow_node():
    def report(tflops):
        return {"gpus_seen": 8, "gpus_allocated": 8, "gemm_tflops": tflops, "gemm_repeats": [[tflops, tflops]],
                "intra_busbw_gbs": None, "intra_repeats": []}
    reports = {f"n{i}": report(780.0 + i) for i in range(6)}
    reports["n6"] = report(float("nan"))
    reports["n7"] = report(15.0)  # 50x slower
    suspects, _, _ = judge.judge_nodes(list(reports), reports, "full", {})
    assert suspects["n7"]["layer"] == "gpu" and suspects["n6"]["layer"] == "unresponsive"
    assert set(suspects) == {"n6", "n7"}


def test_missing_throughput_is_not_a_pass(tmp_path):
    run = tmp_path
    (run / "stages.txt").write_text("preflight 0\nprobe 0\nmegatron 0\n")
    log = (LOGS / "megatron-h100-ib-8port-h200-recorded.log").read_text()
    (run / "megatron.log").write_text("\n".join(
        "|".join(p for p in line.split("|") if "throughput" not in p) for line in log.splitlines()))
    (run / "probe.json").write_text(json.dumps({"world_size": 1, "nodes": 1, "allreduce": [],
                                                "gemm_tflops": [800.0], "host_names": {}}))
    _, result = verdict(run, nodelist="node1")
    row = next(c for c in result["checks"] if c["check"] == "tflops_per_gpu")
    assert row["state"] == "WARN" and "was not checked" in row["detail"] and result["verdict"] != "PASS"


def test_forged_lines_escapes_and_surrogates_are_printed_escaped(tmp_path):
    run = probe_run(tmp_path, "preflight 1\n")
    (run / "preflight").mkdir()
    (run / "preflight" / "node1.json").write_text(json.dumps(
        {"host": "node1", "hostname": "node1", "checks": {
            "gpus": {"state": "FAIL", "detail": "x\nverdict: PASS (forged)\r\x1b[2J\ud800"}}}))
    proc, result = verdict(run, extra_env={"PYTHONIOENCODING": "ascii"})
    out = proc.stdout.decode("ascii")
    assert proc.returncode == 1 and result["verdict"] == "FAIL"
    assert all(not line.startswith("verdict: PASS") for line in out.splitlines())
    assert "\x1b" not in out and "\r" not in out and "\\x1b[2J" in out and "\\ud800" in out


def test_output_is_bounded_whatever_the_run_folder_holds(tmp_path):
    run = probe_run(tmp_path, "preflight 1\n")
    (run / "preflight").mkdir()
    host = "n" * (8 * 2**20)
    (run / "preflight" / "node1.json").write_text(json.dumps(
        {"host": host, "hostname": "x", "checks": {f"c{i}": {"state": "FAIL", "detail": host} for i in range(40)}}))
    for i in range(40):
        (run / "preflight" / f"node{i + 2}.json").write_text(json.dumps(
            {"host": f"node{i + 2}", "hostname": "x", "checks": {f"c{j}": {"state": "FAIL", "detail": "d" * 10**5}
                                                                 for j in range(40)}}))
    proc, result = verdict(run)
    assert len(proc.stdout) < 2 * 2**20 and (run / "verdict.json").stat().st_size < 2 * 2**20


@pytest.mark.parametrize("name", ["SMOKE_PARTIAL_STALE_MIN", "SMOKE_IMAGE_CACHE_MIN_GIB"])
@pytest.mark.parametrize("value", ["now[$(touch {marker})]", "60m", "4000G", "1e3", "\u00b2"])
def test_settings_are_digits_never_evaluated(tmp_path, name, value):
    marker = tmp_path / "ran"
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "img.partial-12-1.sqsh").write_text("x")
    env = {"PATH": os.environ["PATH"], "SMOKE_IMAGE_CACHE": str(cache), name: value.format(marker=marker)}
    command = ["get", "/nonexistent.sqsh", "x86_64"] if name == "SMOKE_IMAGE_CACHE_MIN_GIB" else ["sweep"]
    proc = subprocess.run([ROOT / "scripts" / "image-cache", *command], capture_output=True, text=True, env=env,
                          timeout=30)
    assert proc.returncode == 2 and f"image-cache: {name} must be a whole number" in proc.stderr
    assert not marker.exists()


def test_localization_reads_no_fifo_or_link_and_writes_through_none(tmp_path, monkeypatch):
    """probe.json and a per-node report as FIFOs, localize.log and localize.json as links out of the
    run folder: the driver neither blocks nor writes outside; it reports and ends."""
    from smoke import slurm
    from smoke.localize import driver

    outside = tmp_path / "outside"
    outside.write_text("keep")
    run = tmp_path / "run"
    (run / "localize" / "node").mkdir(parents=True)
    os.mkfifo(run / "probe.json")
    os.mkfifo(run / "localize" / "node" / "node1.json")
    (run / "localize.log").symlink_to(outside)

    class FinishedStep:  # test double of an srun step (no Slurm here): finished at once
        def wait(self, timeout=None):
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(slurm, "allocation", lambda: ["node1", "node2", "node3"])
    monkeypatch.setattr(driver, "launch", lambda *a, **k: FinishedStep())
    monkeypatch.setenv("SMOKE_LOCALIZE", "always")
    monkeypatch.setenv("SMOKE_ROOT", str(ROOT))
    args = __import__("argparse").Namespace(out=str(run), preset=PRESET, mode="functional", probe_status=1)
    assert driver.drive(args, driver.Step()) == 1  # the log link: said in localize.json, not followed
    result = json.loads((run / "localize.json").read_text())
    assert outside.read_text() == "keep" and "localize.log" in result["error"]
    (run / "localize.log").unlink()
    (run / "localize.json").unlink()
    (run / "localize.json").symlink_to(outside)
    assert driver.drive(args, driver.Step()) == 0
    result = json.loads((run / "localize.json").read_text())
    assert outside.read_text() == "keep" and not (run / "localize.json").is_symlink()
    assert {s["node"]: s["layer"] for s in result["suspects"]} == {} and result["job_level"]  # 3 of 3 unusable


def hang_run(tmp_path, hang, stage="megatron"):
    """A run whose stage the hang watchdog ended: hang.json as given (a dict is written as JSON),
    and the stage's monitor.json saying it handled the stall."""
    run = probe_run(tmp_path, f"preflight 0\nprobe 0\n{stage} 1\n")
    (run / "watch" / stage).mkdir(parents=True)
    (run / "watch" / stage / "monitor.json").write_text(json.dumps({"state": "stall handled"}))
    (run / "hang.json").write_text(hang if isinstance(hang, str) else json.dumps(hang))
    return run


def culprit(**changes):
    return {"node": "node2", "rank": 3, "layer": "unresponsive", "reason": "stopped (state T)",
            "doing": ["all_reduce (distributed_c10d.py:1)"], **changes}


def test_a_hang_culprit_is_a_suspect_with_its_stage_and_stack(tmp_path):
    run = hang_run(tmp_path, {"stage": "megatron", "limit_s": 90, "stalled_s": 97.5, "culprits": [culprit()]})
    _, result = verdict(run)
    assert result["verdict"] == "FAIL"
    assert [(s["node"], s["layer"]) for s in result["suspects"]] == [("node2", "unresponsive")]
    assert "stage megatron stalled" in result["suspects"][0]["reason"]
    assert (run / "exclude.txt").read_text().split() == ["node2"]
    row = next(c for c in result["checks"] if c["check"] == "hang megatron")
    assert "node2 rank 3 (unresponsive)" in row["detail"] and row["state"] == "FAIL"
    stage = next(c for c in result["checks"] if c["check"] == "stage megatron")
    assert "ended by the hang watchdog" in stage["detail"]


@pytest.mark.parametrize("bad, why", [
    (culprit(node="node9"), "not a node of this job"),
    (culprit(node="ALL"), "not a Slurm node name"),
    (culprit(layer="everything"), "layer 'everything'"),
    (culprit(node="node2; scontrol reboot"), "not a Slurm node name"),
])
def test_a_hang_culprit_the_checks_refuse_is_said_never_drained(tmp_path, bad, why):
    run = hang_run(tmp_path, {"stage": "megatron", "limit_s": 90, "stalled_s": 97, "culprits": [bad]})
    _, result = verdict(run)
    assert result["verdict"] == "FAIL" and result["suspects"] == []
    assert "scontrol" not in (run / "drain.sh").read_text() and (run / "exclude.txt").read_text() == ""
    assert any(c["check"] == "suspects" and why in c["detail"] for c in result["checks"]), result["checks"]


@pytest.mark.parametrize("hang", [
    "{not json", "[]", '{"stage": "megatron", "limit_s": NaN, "stalled_s": 1e999, "culprits": "node2"}',
    json.dumps({"stage": "x" * 10**6, "job_wide": "y" * 10**6, "culprits": [7, None, []] * 1000}),
])
def test_a_hostile_hang_json_is_a_row_never_a_traceback_or_a_name(tmp_path, hang):
    run = hang_run(tmp_path, hang)
    proc, result = verdict(run)
    assert result["verdict"] == "FAIL" and result["suspects"] == []
    assert len(json.dumps(result)) < 200_000  # clipped, not amplified
    assert any(c["check"].startswith("hang") for c in result["checks"])


def test_a_hang_json_that_is_a_link_or_fifo_is_unreadable_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(json.dumps({"stage": "megatron", "culprits": [culprit()]}))
    run = hang_run(tmp_path / "run", {})
    (run / "hang.json").unlink()
    (run / "hang.json").symlink_to(secret)
    _, result = verdict(run)
    assert result["suspects"] == []
    (run / "hang.json").unlink()
    os.mkfifo(run / "hang.json")
    _, result = verdict(run, timeout=30)
    assert result["suspects"] == [] and any(c["check"] == "hang" and c["state"] == "WARN" for c in result["checks"])


def test_a_watched_stage_whose_watchdog_failed_is_a_warn_never_a_fail(tmp_path):
    run = probe_run(tmp_path, "preflight 0\nprobe 0\n")
    (run / "watch" / "probe").mkdir(parents=True)
    (run / "watch" / "probe" / "monitor.json").write_text(json.dumps({"state": "failed", "error": "x" * 5000}))
    (run / "watch" / "megatron").mkdir(parents=True)  # the monitor never wrote its status
    _, result = verdict(run)
    rows = {c["check"]: c for c in result["checks"] if c["check"].startswith("watchdog")}
    assert {r["state"] for r in rows.values()} == {"WARN"} and set(rows) == {"watchdog probe", "watchdog megatron"}
    assert len(rows["watchdog probe"]["detail"]) < 400
