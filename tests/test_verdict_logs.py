"""The log readers on fixtures hand-written in the formats the real programs print (each file's first
line names the program, the source file and the release it follows; docs/verdict-log-formats.md)."""
import pytest

from conftest import FIXTURES
from smoke.verdict import logs
from smoke.verdict.rows import FAIL, PASS, WARN
from smoke.verdict.sections import judge_training

FORMATS = FIXTURES / "runtime" / "formats"
LOGS = FIXTURES / "runtime"


def text(name: str) -> str:
    """The fixture without its first line (the line that says which format it follows)."""
    return (FORMATS / name).read_text().partition("\n")[2]


# fixture -> (cause class, node, rank) the verdict must name
CAUSES = {
    "cuda-oom-rank.log": ("cuda-oom", "gpu-c11", "10"),
    "nccl-watchdog-timeout.log": ("nccl-watchdog", "gpu-a17", "6"),
    "torchrun-sigkill.log": ("signal", "gpu-b07", "11"),
    "megatron-nan-check-raised.log": ("nan-loss", "gpu-b03", "5"),
    "rdzv-store-unreachable.log": ("rdzv-unreachable", None, None),
    "rdzv-timeout.log": ("rdzv-timeout", None, None),
    "slurm-time-limit.log": ("slurm-timelimit", "gpu-a03", None),
    "slurm-preempted.log": ("slurm-preempt", "gpu-d02", None),
    "slurm-requeued.log": ("slurm-requeue", "gpu-d05", None),
    "slurm-node-failure.log": ("slurm-node-failure", "gpu-e09", None),
    "slurm-cgroup-oom.log": ("slurm-oom", "gpu-f01", None),
    "slurm-cgroup-oom-old.log": ("slurm-oom", "gpu-f03", None),
    "slurm-memory-limit.log": ("slurm-oom", "gpu-f05", None),
    "nccl-ib-completion-error.log": ("nccl-ib-error", "gpu-a17", None),
    "nccl-ibv-modify-qp.log": ("nccl-ib-error", "gpu-c04", None),
    "container-nvidia-cli-node.log": ("container-node", "gpu-g02", None),
    "container-run-enroot-denied.log": ("container-node", "gpu-g05", None),
    "container-no-space.log": ("container-node", "gpu-g07", None),
    "container-image-execve.log": ("container-image", "gpu-g08", None),
    "image-pull-401.log": ("image-pull", None, None),
    "image-pull-404.log": ("image-pull", None, None),
    "image-pull-429.log": ("image-pull", None, None),
    "gpu-ecc-error.log": ("gpu-hardware", None, "4"),
}


@pytest.mark.parametrize("name", sorted(CAUSES))
def test_each_cause_is_named_with_where_and_what_to_do(name):
    kind, node, rank = CAUSES[name]
    cause = logs.failure_causes(text(name))[0]
    assert (cause.kind, cause.node, cause.rank) == (kind, node, rank), cause
    assert cause.sentence == logs.failure_cause(text(name))
    for where in (node, rank):
        assert where is None or where in cause.sentence
    assert ";" in cause.sentence or ": " in cause.sentence  # the cause, then what to do


def test_node_side_container_failures_do_not_blame_the_image():
    for name in ("container-nvidia-cli-node.log", "container-run-enroot-denied.log", "container-no-space.log"):
        assert "image" not in logs.failure_cause(text(name)).split("not the image")[0]


def test_every_fixture_is_in_a_real_format_and_says_which():
    for path in FORMATS.iterdir():
        assert path.read_text().startswith("# hand-written after "), path.name
        assert "not output of a real run" in path.read_text().partition("\n")[0], path.name


@pytest.mark.parametrize("name,state,words", [
    ("megatron-healthy.log", PASS, "over 8 iterations"),
    ("megatron-fp16-warmup-then-loss.log", PASS, "over 3 iterations"),
    ("megatron-nan-loss-disappears.log", FAIL, "non-finite (NaN/Inf) from iteration 4"),
    ("megatron-all-iterations-skipped.log", FAIL, "non-finite"),
    ("megatron-nan-check-raised.log", FAIL, "rank 5, node gpu-b03"),
])
def test_training_logs(name, state, words):
    rows = judge_training(logs.parse_training_log(text(name)), None)
    loss = [r for r in rows if r.check == "loss"]
    assert loss[0].state == state and words in loss[0].detail, rows


def test_every_skipped_interval_without_a_nan_is_named_as_the_loss_scaler():
    lines = [line.replace("number of nan iterations:   5", "number of nan iterations:   0")
             for line in text("megatron-all-iterations-skipped.log").splitlines()]
    rows = judge_training(logs.parse_training_log("\n".join(lines)), None)
    assert [r.state for r in rows] == [FAIL] and "skipped by the fp16 loss scaler" in rows[0].detail
    assert "134217728 -> 4096" in rows[0].detail


def test_a_disappearing_or_non_finite_loss_never_passes():
    """Any healthy log with one interval's loss removed, set to nan/INF, or its grad norm nan: never PASS."""
    healthy = text("megatron-healthy.log").splitlines()[1:]
    for index in range(len(healthy)):
        for change in (("lm loss: ", "lm loss: nan | x: "), ("lm loss: ", "lm loss: INF | x: "),
                       ("grad norm: ", "grad norm: nan | x: ")):
            broken = healthy[:]
            broken[index] = broken[index].replace(*change)
            rows = judge_training(logs.parse_training_log("\n".join(broken)), None)
            assert any(r.state == FAIL for r in rows), (index, change, rows)
        dropped = healthy[:]
        head, _, tail = dropped[index].partition(" lm loss: ")
        dropped[index] = head + " " + tail.partition("| ")[2]
        rows = judge_training(logs.parse_training_log("\n".join(dropped)), None)
        assert any(r.state == FAIL for r in rows), (index, rows)


def test_deepspeed_and_apex_loss_scalers():
    ds = ("[2021-01-26 22:05:35,108] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. Skipping step. "
          "Attempted loss scale: 1, reducing to 1\n") * 3
    rows = judge_training(logs.parse_training_log(ds), None)
    assert rows[0].state == FAIL and "rank 0" in rows[0].detail
    warmup = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
    assert judge_training(logs.parse_training_log(warmup), None)[0].state == WARN
    assert judge_training(logs.parse_training_log(
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n"), None)[0].state == FAIL


def test_a_short_flat_loss_is_not_a_failure_but_a_rising_one_is():
    def log(*losses):
        return logs.parse_training_log("".join(f" iteration {i + 1}/ 100 | lm loss: {x:E} | number of skipped "
                                               f"iterations:   0 | number of nan iterations:   0 |\n"
                                               for i, x in enumerate(losses)))
    assert judge_training(log(2.38, 2.47, 2.41, 2.43), None)[0].state == PASS  # mid-run noise
    assert judge_training(log(2.27, 11.05), None)[0].state == FAIL
    assert judge_training(log(*([5.0] * 12)), None)[0].state == FAIL  # a long run that never learns
    assert judge_training(log(3.0), None)[-1].state == WARN


def test_transport_names_are_read_whole_and_init_lines_count():
    assert logs.nccl_networks(text("nccl-transport-efa.log")) == {"AWS Libfabric"}
    assert logs.nccl_networks(text("nccl-socket-bootstrap-then-ib.log")) == {"IB"}
    assert logs.nccl_networks("h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
                              "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n") == {"Socket"}


def test_collateral_lines_do_not_hide_the_cause():
    """The rank that died first, not the store error its peers hit while shutting down; the out-of-memory
    line, not the SIGKILL it caused; a task that crashed, not the step cancel srun sent after it."""
    killed = text("torchrun-sigkill.log") + ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: "
                                             "The connection to the C10d store has failed.\n")
    assert logs.failure_causes(killed)[0].kind == "signal"
    oom = text("slurm-cgroup-oom.log") + text("torchrun-sigkill.log")
    assert logs.failure_causes(oom)[0].kind == "slurm-oom"
    crashed = ("srun: error: gpu-a1: task 7: Bus error\n"
               "slurmstepd: error: *** STEP 12.0 ON gpu-a1 CANCELLED AT 2026-01-01T00:00:00 ***\n")
    assert logs.failure_causes(crashed)[0].kind == "srun-task"


def test_lookalike_lines_name_no_cause():
    """Lines made of the markers the readers look for, without the rest of the format (the bench times
    them at large sizes): no cause is invented from them."""
    line = ("*** JOB 1 ON " + "n" * 90 + " CANCELLED " + "Watchdog caught collective " + "WorkNCCL(SeqNum="
            + "Rank " * 50 + "found NaN " * 20 + "returned error code " * 20)[:4000]
    assert logs.failure_causes((line + "\n") * 50) == []
    assert logs.parse_training_log((line + "\n") * 50).iterations == []


@pytest.mark.parametrize("line,kind,rank", [
    # torch ProcessGroupNCCL's DistBackendError with NCCL's ncclGetErrorString (src/init.cc)
    ("[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
     "1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5", "nccl-error", "3"),
    ("[rank1]: RuntimeError: NCCL error: remote process exited or there was a network error", "nccl-error", "1"),
    ("[rank0]: RuntimeError: CUDA error: out of memory", "cuda-oom", "0"),
    ("[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered", "cuda-crash", "2"),
    ("srun: error: Node failure on gpu-x1", "slurm-node-failure", None),
])
def test_more_causes_from_one_line(line, kind, rank):
    cause = logs.failure_causes(line + "\n")[0]
    assert (cause.kind, cause.rank) == (kind, rank), cause


def test_a_step_srun_ended_after_a_task_failed_is_not_called_a_cancellation():
    """Recorded on the local cluster: task 1 failed, srun's --kill-on-bad-exit then ended the step and
    slurmstepd printed `*** STEP ... CANCELLED AT ... ***`. That is not scancel or an administrator."""
    text = (LOGS / "stage-step-killed-after-task-failed-recorded.log").read_text()
    cause = logs.failure_cause(text)
    assert cause.startswith("srun task 1 on node2 exited with exit code 1 first") and "scancel" not in cause
