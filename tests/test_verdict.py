"""The verdict turns a run folder into PASS / WARN / FAIL with the reason."""
import json
import shutil

import pytest

from conftest import FIXTURES, ROOT
from smoke.verdict import logs
from smoke.verdict import main as verdict
LOGS = FIXTURES / "runtime"


@pytest.fixture(autouse=True)
def allocation(monkeypatch):
    """The job's nodes, as the batch shell's SLURM_JOB_NODELIST gives them: only these can be named."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[1-16]")


def run_dir(tmp_path, log=None, stages="preflight 0\nmegatron 0\n"):
    (tmp_path / "stages.txt").write_text(stages)
    if log:
        shutil.copy(LOGS / log, tmp_path / "megatron.log")
    return tmp_path


def judge(tmp_path, mode="full", preset="h100-ib-8port"):
    code = verdict.main(["--run-dir", str(tmp_path), "--preset", str(ROOT / "presets" / preset), "--mode", mode])
    return code, json.loads((tmp_path / "verdict.json").read_text())


RECORDED = json.loads((LOGS / "megatron-h200-recorded.json").read_text())


@pytest.mark.parametrize("preset", ["ethernet-only"])
def test_recorded_megatron_run_passes(tmp_path, preset):
    """Recorded: pretrain_gpt.py (core_v0.13.0) started by scripts/megatron-node on one H200."""
    log = f"megatron-{preset}-h200-recorded.log"
    code, result = judge(run_dir(tmp_path, log), preset=preset)
    assert (code, result["verdict"]) == (0, "PASS"), result
    tflops = next(c for c in result["checks"] if c["check"] == "tflops_per_gpu")
    # iteration 1 (start-up) dropped: the median of iterations 2-30, as recorded beside the log
    assert tflops["detail"].startswith(f"median {RECORDED['logs'][log]['tflops_median_steady']:.1f}")
    loss = next(c for c in result["checks"] if c["check"] == "loss")
    assert loss["state"] == "PASS" and "over 30 iterations" in loss["detail"]


def test_slow_run_fails_with_the_number(tmp_path):
    """Recorded: the h100-ib-8port model on one H200 without Transformer Engine (TP 1, local layers)
    is slower than the floor that preset sets for TE on H100s."""
    code, result = judge(run_dir(tmp_path, "megatron-h100-ib-8port-h200-recorded.log"))
    assert (code, result["verdict"]) == (1, "FAIL")
    failed = [c["detail"] for c in result["checks"] if c["state"] == "FAIL"]
    assert failed == ["median 189.2, expected >= 300"]


def test_gh200_model_without_transformer_engine_fails(tmp_path):
    """Recorded: the gh200 model on one H200 with Megatron's local layers (no Transformer Engine) runs
    at 136.9; published GH200 runs with TE reach ~400-500, so the preset's floor (250) fails it (issue 25)."""
    log = "megatron-gh200-h200-recorded.log"
    code, result = judge(run_dir(tmp_path, log), preset="gh200")
    assert (code, result["verdict"]) == (1, "FAIL")
    failed = [c["detail"] for c in result["checks"] if c["state"] == "FAIL"]
    assert failed == [f"median {RECORDED['logs'][log]['tflops_median_steady']:.1f}, expected >= 250"]


@pytest.mark.parametrize("log", ["formats/megatron-nan-loss-disappears.log", "formats/megatron-all-iterations-skipped.log",
                                 "formats/megatron-nan-check-raised.log"])
def test_nan_loss_fails(tmp_path, log):
    """Hand-written in Megatron core_v0.13.0's format: a NaN loss is dropped from the iteration line, not
    printed as 'lm loss: nan' (training.py prints a loss only when its average is > 0)."""
    code, result = judge(run_dir(tmp_path, log))
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


def probe_run(tmp_path, probe, log):
    run = run_dir(tmp_path, stages="preflight 0\nprobe 0\n")
    shutil.copy(LOGS / probe, run / "probe.json")
    shutil.copy(LOGS / log, run / "probe.log")
    return run


def test_healthy_probe_over_ib_passes(tmp_path):
    code, result = judge(probe_run(tmp_path, "probe-2node-healthy.json", "nccl-ib.log"))
    states = {c["check"]: c["state"] for c in result["checks"]}
    assert {k: states[k] for k in ("stage probe", "gemm_tflops", "allreduce_busbw", "transport")} == dict.fromkeys(
        ("stage probe", "gemm_tflops", "allreduce_busbw", "transport"), "PASS"), result
    assert states["training"] == "FAIL"  # this run folder holds no training stage: never a pass


def test_socket_fallback_on_ib_topology_fails(tmp_path):
    code, result = judge(probe_run(tmp_path, "probe-2node-healthy.json", "nccl-socket-fallback.log"))
    transport = next(c for c in result["checks"] if c["check"] == "transport")
    assert (code, transport["state"]) == (1, "FAIL") and "Socket" in transport["detail"]


@pytest.mark.parametrize("preset,fabric", [("roce", "RoCE"), ("h100-ib-8port", "InfiniBand")])
def test_roce_is_judged_like_infiniband(tmp_path, preset, fabric):
    """NCCL runs RoCE through its IB transport (NET/IB); Socket between nodes is a silent fallback."""
    (tmp_path / "ib").mkdir(), (tmp_path / "socket").mkdir()
    code, result = judge(probe_run(tmp_path / "ib", "probe-2node-healthy.json", "nccl-ib.log"), preset=preset)
    assert next(c for c in result["checks"] if c["check"] == "transport")["state"] == "PASS"
    code, result = judge(probe_run(tmp_path / "socket", "probe-2node-healthy.json", "nccl-socket-fallback.log"),
                         preset=preset)
    transport = next(c for c in result["checks"] if c["check"] == "transport")
    assert (code, transport["state"]) == (1, "FAIL") and f"on an {fabric} topology" in transport["detail"]


@pytest.mark.parametrize("log", ["nccl-sharp-ibext.log", "nccl-ib.log"])
def test_ib_family_passes_and_gdrdma_is_quiet(tmp_path, log):
    """The SHARP plugin names the IB transport IBext_vN (hand-written log in NCCL's line format)."""
    code, result = judge(probe_run(tmp_path, "probe-2node-healthy.json", log))
    states = {c["check"]: c["state"] for c in result["checks"]}
    assert (states["transport"], "gpudirect" in states) == ("PASS", False), result


def test_ib_without_gdrdma_warns(tmp_path):
    code, result = judge(probe_run(tmp_path, "probe-2node-healthy.json", "nccl-ib-no-gdr.log"))
    gdr = next(c for c in result["checks"] if c["check"] == "gpudirect")
    assert gdr["state"] == "WARN" and "2 of 2" in gdr["detail"], result


def test_slow_fabric_and_straggler_fail_with_numbers(tmp_path):
    code, result = judge(probe_run(tmp_path, "probe-2node-slow.json", "nccl-ib.log"))
    failed = {c["check"]: c["detail"] for c in result["checks"] if c["state"] == "FAIL"}
    assert "120.0 GB/s" in failed["allreduce_busbw"] and "expected >= 300" in failed["allreduce_busbw"]
    assert failed["gemm stragglers"] == "node2 rank 15"
    assert "slowest rank 610, expected >= 700" in failed["gemm_tflops"]


def test_probe_stage_without_result_fails(tmp_path):
    run = run_dir(tmp_path, "megatron-ethernet-only-h200-recorded.log", stages="preflight 0\nprobe 0\nmegatron 0\n")
    code, result = judge(run, preset="ethernet-only")
    assert result["verdict"] == "FAIL"
    assert [c["check"] for c in result["checks"] if c["state"] == "FAIL"] == ["probe"]


def test_straggler_rule():
    from smoke import probe  # needs torch: imported here, not for every verdict test
    assert probe.stragglers([780, 781, 779, 782, 700]) == [4]
    assert probe.stragglers([780, 781, 779, 782, 760]) == []  # within 10% of the median
    assert probe.stragglers([780, 700]) == []  # too few ranks to call one slow


def test_rendezvous_timeout_is_named_as_the_cause(tmp_path, monkeypatch):
    """Recorded on the local Slurm cluster: node2's launcher never started, node1's torchrun gave up."""
    monkeypatch.setenv("SMOKE_RDZV_TIMEOUT", "20")
    shutil.copy(LOGS / "stage-rdzv-timeout-recorded.log", tmp_path / "probe.log")
    code, result = judge(run_dir(tmp_path, stages="preflight 0\nprobe 143\n"))
    probe = next(c for c in result["checks"] if c["check"] == "stage probe")
    assert code == 1 and probe["state"] == "FAIL"
    assert "exit code 143: the rendezvous did not form" in probe["detail"] and "(20 s)" in probe["detail"]


def test_killed_rank_is_named_as_the_cause(tmp_path):
    """Recorded on the local Slurm cluster: rank 3 on node1 was sent SIGKILL mid-run."""
    shutil.copy(LOGS / "stage-killed-rank-recorded.log", tmp_path / "megatron.log")
    code, result = judge(run_dir(tmp_path, stages="preflight 0\nprobe 0\nmegatron 143\n"), mode="functional")
    stage = next(c for c in result["checks"] if c["check"] == "stage megatron")
    assert stage["detail"].startswith("exit code 143: rank 3 on node1 was killed by SIGKILL first; the other ranks "
                                      "were stopped after it: killed from outside the program")
    assert "out-of-memory killer" in stage["detail"]  # what to do: the usual sender of a SIGKILL


@pytest.mark.parametrize("text", ["", "srun: error: node1: task 0: Exited with exit code 1\n"])
def test_unknown_failure_keeps_the_exit_code_alone(text):
    assert logs.failure_cause(text) is None


def test_job_ended_by_slurm_fails_and_says_so(tmp_path):
    (tmp_path / "signalled").write_text("SIGTERM megatron\n")
    code, result = judge(run_dir(tmp_path, stages="preflight 0\nprobe 0\nmegatron 143\n"), mode="functional")
    job = next(c for c in result["checks"] if c["check"] == "job")
    assert code == 1 and job["state"] == "FAIL"
    assert job["detail"].startswith("Slurm ended the job with SIGTERM during stage megatron")


def test_any_run_folder_content_still_gives_a_verdict(tmp_path):
    """Truncated reports (a rank killed mid-write), foreign JSON, FIFOs and folders where files
    belong, binary logs, a stage name that points elsewhere: each fails its own section, with the
    reason, and verdict.json is still written."""
    import os
    (tmp_path / "stages.txt").write_bytes(b"preflight 0\nprobe 0\n../../etc/passwd 1\n\xff\xfe garbage\n\n")
    (tmp_path / "signalled").write_bytes(b"\x00\x01SIGTERM")
    pre = tmp_path / "preflight"
    pre.mkdir()
    (pre / "a.json").write_text('{"host": "n1", "checks": {"gpu": {"sta')
    (pre / "b.json").write_text("[]")
    os.mkfifo(pre / "c.json")
    (pre / "d.json").mkdir()
    (pre / "e.json").write_text('{"host": "n2", "checks": {"gpu": "FAIL"}}')
    (pre / "f.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "probe.json").write_text('{"world_size": "x"')
    os.mkfifo(tmp_path / "megatron.log")
    code, result = judge(tmp_path)
    assert (code, result["verdict"]) == (1, "FAIL")
    details = {c["check"]: c["detail"] for c in result["checks"]}
    assert "stages.txt" in details and "garbled" in details["stages.txt"]
    assert "not JSON" in details["preflight a.json"] and "not a JSON object" in details["preflight b.json"]
    assert "not a regular file" in details["preflight c.json"] and "not a regular file" in details["training"]
    assert "malformed" in details["preflight e.json"] and "not JSON" in details["probe"]
    fn = tmp_path / "functional"
    fn.mkdir()
    (fn / "rank-0.json").write_text('{"rank": 0, "world_size": 2, "host": "n1", "losses": [3.1, 2.')
    (fn / "rank-1.json").write_text('{"rank": 1, "world_size": 2, "host": "n1", "losses": ["x", null]}')
    code, result = judge(tmp_path, mode="functional")
    assert (code, result["verdict"]) == (1, "FAIL")
    assert any("rank-0.json: not JSON" in c["detail"] for c in result["checks"] if c["check"] == "ranks")
    (tmp_path / "verdict.json").unlink()
    (tmp_path / "verdict.json").mkdir()  # even where the verdict cannot be written, it is printed
    assert verdict.main(["--run-dir", str(tmp_path), "--preset", str(ROOT / "presets" / "gh200")]) == 1


def test_container_record_and_host_checks(tmp_path):
    """smoke_container's container.tsv: the image and runtime go into verdict.json, a failed host
    check fails the job with its advice, an architecture override is visible."""
    (tmp_path / "container.tsv").write_text(
        "info\truntime\tpyxis\ninfo\timage\t/images/standin.sqsh\ninfo\tpreset_arch\taarch64\ninfo\tarch\tx86_64\n"
        "check\tarch\tWARN\tSMOKE_ARCH_OVERRIDE=x86_64 replaces the preset's aarch64\n"
        "check\tpyxis\tFAIL\tsrun has no --container-image option: pyxis is not installed\n")
    code, result = judge(tmp_path, mode="container-functional", preset="gh200")
    assert (code, result["verdict"]) == (1, "FAIL")
    assert result["container"] == {"runtime": "pyxis", "image": "/images/standin.sqsh", "preset_arch": "aarch64",
                                   "arch": "x86_64", "arch_override": "aarch64 -> x86_64"}
    assert {"check": "container pyxis", "state": "FAIL",
            "detail": "srun has no --container-image option: pyxis is not installed"} in result["checks"]


def test_container_that_did_not_start_is_named(tmp_path):
    (tmp_path / "stages.txt").write_text("preflight 1\n")
    (tmp_path / "preflight.log").write_text(  # hand-written, in pyxis 0.24.0 wording (pyxis_slurmstepd.c, enroot.c)
        "slurmstepd-node2: error: pyxis: container start failed with error code: 1\n"
        "slurmstepd-node2: error: pyxis: printing enroot log file:\n"
        "slurmstepd-node2: error: pyxis: child 123 failed with error code: 1\n")
    _, result = judge(tmp_path, mode="container-functional", preset="ethernet-only")
    stage = next(c for c in result["checks"] if c["check"] == "stage preflight")
    assert "the container did not start on node2 (pyxis: container start failed with error code: 1)" in stage["detail"]


def test_one_node_falling_back_to_sockets_is_named_config(tmp_path):
    """Node2's NCCL used sockets while node1's used IB (hand-written from the pattern of nccl-ib.log
    and nccl-socket-fallback.log; node2's host name is not its Slurm name, as with an FQDN host).
    Before, IB on any node made the transport check pass and nobody was named."""
    run = probe_run(tmp_path, "probe-2node-healthy.json", "nccl-ib.log")
    probe = json.loads((run / "probe.json").read_text())
    probe["host_names"] = {"node1": "node1", "gpu-a17": "node2"}
    (run / "probe.json").write_text(json.dumps(probe))
    socket_lines = (LOGS / "nccl-socket-fallback.log").read_text().replace("0: node1:", "1: gpu-a17:")
    (run / "probe.log").write_text((LOGS / "nccl-ib.log").read_text() + socket_lines)
    code, result = judge(run)
    transport = next(c for c in result["checks"] if c["check"] == "transport")
    assert (code, transport["state"]) == (1, "FAIL") and "over sockets on 1 of 2 node(s) (node2)" in transport["detail"]
    assert [(s["node"], s["layer"]) for s in result["suspects"]] == [("node2", "config")]
    assert (run / "exclude.txt").read_text() == "node2\n"


def test_a_failed_probe_still_names_the_node_on_sockets_from_the_preflight_reports(tmp_path):
    """Mixed transports can fail the probe itself (no probe.json): the preflight reports, written on
    every node before it, map NCCL's host names to Slurm's. An unknown host name is never named."""
    run = run_dir(tmp_path, stages="preflight 0\nprobe 1\n")
    (run / "preflight").mkdir()
    for node, host in (("node1", "node1"), ("node2", "gpu-a17.cluster.test")):
        (run / "preflight" / f"{node}.json").write_text(json.dumps({"host": node, "hostname": host, "checks": {}}))
    socket_lines = (LOGS / "nccl-socket-fallback.log").read_text()
    (run / "probe.log").write_text((LOGS / "nccl-ib.log").read_text() + socket_lines.replace("0: node1:", "1: gpu-a17:")
                                   + socket_lines.replace("0: node1:", "2: stranger:"))
    code, result = judge(run)
    assert code == 1 and [(s["node"], s["layer"]) for s in result["suspects"]] == [("node2", "config")]
    row = next(c for c in result["checks"] if c["check"] == "suspect node2")  # said, not only in suspects
    assert row["state"] == "FAIL" and row["detail"].startswith("config: NCCL fell back to sockets")


def test_most_nodes_on_sockets_is_job_wide_and_names_nobody(tmp_path):
    """Three of four nodes on sockets: a shared cause (NCCL_IB_HCA, the image), not three nodes to drain."""
    run = probe_run(tmp_path, "probe-2node-healthy.json", "nccl-ib.log")
    probe = json.loads((run / "probe.json").read_text())
    probe["host_names"] = {f"node{i}": f"node{i}" for i in range(1, 5)}
    (run / "probe.json").write_text(json.dumps(probe))
    socket_lines = (LOGS / "nccl-socket-fallback.log").read_text()
    (run / "probe.log").write_text((LOGS / "nccl-ib.log").read_text() + "".join(
        socket_lines.replace("0: node1:", f"{i}: node{i}:") for i in (2, 3, 4)))
    code, result = judge(run)
    transport = next(c for c in result["checks"] if c["check"] == "transport")
    assert code == 1 and result["suspects"] == [] and "3 of 4 node(s)" in transport["detail"]
    assert "job-wide" in transport["detail"] and (run / "exclude.txt").read_text() == ""


def test_every_node_on_sockets_is_job_wide_and_names_nobody(tmp_path):
    code, result = judge(probe_run(tmp_path, "probe-2node-healthy.json", "nccl-socket-fallback.log"))
    assert code == 1 and result["suspects"] == [] and (tmp_path / "exclude.txt").read_text() == ""


def test_the_network_floor_follows_the_nics_the_run_was_given(tmp_path, monkeypatch):
    """Finding 5: a 400G floor on NDR200 nodes fails healthy runs. SMOKE_NIC_GBPS (a setting a user
    passes) scales the manifest's floor by the line rate, and the row says so."""
    run = probe_run(tmp_path, "probe-2node-healthy.json", "nccl-ib.log")
    probe = json.loads((run / "probe.json").read_text())
    probe["allreduce"][-1]["busbw_gbs"] = 200.0
    (run / "probe.json").write_text(json.dumps(probe))
    monkeypatch.setenv("SMOKE_IB_PORTS", "8")
    monkeypatch.setenv("SMOKE_NIC_GBPS", "400")
    row = next(c for c in judge(run)[1]["checks"] if c["check"] == "allreduce_busbw")
    assert row["state"] == "FAIL"
    monkeypatch.setenv("SMOKE_NIC_GBPS", "200")
    row = next(c for c in judge(run)[1]["checks"] if c["check"] == "allreduce_busbw")
    assert row["state"] == "PASS" and "scaled from 300 for 8 x 200 Gb/s" in row["detail"], row
