"""The hang watchdog (issue 26, smoke.watchdog): the judge on the evidence of each fault, the stack
reader on real faulthandler dumps, real processes (a gloo job of two ranks on this machine, each
with its agent, and the monitor) stopped or spinning, and the verdict on hang.json, hostile ones
included. The Slurm runs are tests/test_e2e_slurm.py's and bench/hang_matrix.py's."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from smoke.watchdog.judge import judge
from smoke.watchdog.stacks import parse_dump

NODES = ["node1", "node2", "node3", "node4"]
IN_ALLREDUCE = {"where": "collective", "op": "all_reduce", "top": ["all_reduce (distributed/distributed_c10d.py:1)"]}
SPINNING = {"where": "outside", "op": None, "top": ["load (data/loader.py:7)"]}


def evidence(ranks_per_node=2, states=None, stacks=None, reach=None, silent=()):
    """Evidence of a 4-node job: every rank sleeping in all_reduce and every node reaching every other,
    with what a case changes: states/stacks {rank: ...}, reach {node: {peer: bool}}, silent nodes."""
    out = {}
    for i, node in enumerate(NODES):
        if node in silent:
            out[node] = None
            continue
        ranks = {}
        for local in range(ranks_per_node):
            rank = i * ranks_per_node + local
            state = (states or {}).get(rank, "S")
            stack = (stacks or {}).get(rank, None if state == "T" else IN_ALLREDUCE)
            ranks[str(rank)] = {"pid": 100 + rank, "state": state, "state_after": state, "stack": stack, "wchan": ""}
        out[node] = {"node": node, "ranks": ranks,
                     "reach": (reach or {}).get(node, {p: True for p in NODES if p != node})}
    return out


def cut(node):
    """node's network cut: it reaches nobody, nobody reaches it."""
    return {n: {p: (n != node and p != node) for p in NODES if p != n} for n in NODES}


def names(decision):
    return [(c["node"], c["rank"], c["layer"]) for c in decision["culprits"]]


def test_stopped_rank_is_named_with_its_rank():
    d = judge(NODES, set(NODES), evidence(states={5: "T"}))
    assert names(d) == [("node3", 5, "unresponsive")] and d["job_wide"] is None


def test_every_rank_of_a_node_stopped_names_the_node_once_per_rank():
    d = judge(NODES, set(NODES), evidence(states={2: "T", 3: "T"}))
    assert names(d) == [("node2", 2, "unresponsive"), ("node2", 3, "unresponsive")]


def test_a_gone_rank_and_uninterruptible_sleep():
    assert names(judge(NODES, set(NODES), evidence(states={0: "gone"}))) == [("node1", 0, "unresponsive")]
    assert names(judge(NODES, set(NODES), evidence(states={7: "D"}), cuda=True)) == [("node4", 7, "gpu")]


def test_spinning_rank_outside_the_collective_on_cpu_only():
    ev = evidence(stacks={4: SPINNING})
    assert names(judge(NODES, set(NODES), ev)) == [("node3", 4, "rank")]
    # on GPUs a rank waiting for NCCL sits in whatever line synchronises: a stack alone names nobody
    assert judge(NODES, set(NODES), ev, cuda=True)["culprits"] == []


def test_flight_recorder_names_the_rank_behind_on_gpus():
    flight = {r: {"entries": [{"seq": 41 if r == 6 else 42}]} for r in range(8)}
    d = judge(NODES, set(NODES), evidence(), cuda=True, flight=flight)
    assert names(d) == [("node4", 6, "rank")]


def test_cut_node_is_network():
    d = judge(NODES, set(NODES), evidence(reach=cut("node2")))
    assert names(d) == [("node2", None, "network")]


def test_cut_node_that_also_wrote_nothing_is_network():
    d = judge(NODES, set(NODES), evidence(reach=cut("node4"), silent=("node4",)))
    assert names(d) == [("node4", None, "network")]


def test_two_nodes_that_cannot_reach_each_other_are_job_wide():
    ev = {n: {"node": n, "ranks": {}, "reach": {p: False for p in NODES[:2] if p != n}} for n in NODES[:2]}
    d = judge(NODES[:2], set(NODES[:2]), ev)
    assert d["culprits"] == [] and "cannot reach each other" in d["job_wide"]


def test_nobody_reaches_anybody_is_job_wide():
    reach = {n: {p: False for p in NODES if p != n} for n in NODES}
    d = judge(NODES, set(NODES), evidence(reach=reach))
    assert d["culprits"] == [] and "job-wide" in d["job_wide"]


def test_silent_but_reachable_node_is_unresponsive():
    d = judge(NODES, set(NODES), evidence(silent=("node3",)))
    assert names(d) == [("node3", None, "unresponsive")]


def test_all_waiting_is_job_wide_and_never_names_a_node():
    d = judge(NODES, set(NODES), evidence())
    assert d["culprits"] == [] and "all_reduce" in d["job_wide"]


def test_more_than_half_the_nodes_is_job_wide():
    d = judge(NODES, set(NODES), evidence(states={0: "T", 2: "T", 4: "T"}))
    assert d["culprits"] == [] and "3 of 4 nodes" in d["job_wide"]


def test_no_rank_started():
    d = judge(NODES, set(), {n: None for n in NODES})
    assert d["culprits"] == [] and "before training" in d["job_wide"]


def test_stack_reader_on_a_real_rank_blocked_in_gloo(tmp_path):
    """A real faulthandler dump of a process blocked in a gloo all_reduce whose peer never comes."""
    code = (
        "import faulthandler, os, signal, sys, torch, torch.distributed as dist\n"
        "faulthandler.register(signal.SIGUSR1, file=open(sys.argv[1], 'a'), all_threads=True)\n"
        "dist.init_process_group('gloo', rank=int(os.environ['RANK']), world_size=2)\n"
        "open(sys.argv[1] + '.ready', 'w').close()\n"
        "if dist.get_rank() == 0:\n"
        "    dist.all_reduce(torch.ones(4))\n"
        "else:\n"
        "    import time; time.sleep(60)\n")
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29000 + os.getpid() % 1000)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / f"r{r}.stack")], env={**env, "RANK": str(r)})
             for r in range(2)]
    try:
        # both joined (importing torch takes many seconds on a loaded machine: wait for it, not a fixed time)
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"r{r}.stack.ready").exists() for r in range(2)) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)  # rank 0 is in its all_reduce by now
        for p in procs:
            p.send_signal(signal.SIGUSR1)
        while not all((tmp_path / f"r{r}.stack").stat().st_size for r in range(2)) and time.monotonic() < deadline:
            time.sleep(0.2)
        rank0 = parse_dump((tmp_path / "r0.stack").read_text())
        rank1 = parse_dump((tmp_path / "r1.stack").read_text())
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert rank0["where"] == "collective" and rank0["op"] == "all_reduce", rank0
    assert rank1["where"] == "outside" and rank1["top"][0].startswith("<module>"), rank1


def frames(*lines):
    return "Current thread 0x00007f00 (most recent call first):\n" + "".join(
        f'  File "{f}", line {n} in {fn}\n' for f, n, fn in lines)


C10D = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"
LOGGER = "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py"


def test_own_code_on_top_of_a_collective_is_outside_it():
    """A handler (or hook) of the rank's own running on top of all_reduce's frame: the rank runs its
    code, it does not wait (the hang matrix's spin-rank read as waiting before)."""
    spinning = parse_dump(frames(("/job/smoke/tiny_train.py", 61, "spin"), (C10D, 3252, "all_reduce"),
                                 (LOGGER, 83, "wrapper"), ("/job/smoke/tiny_train.py", 97, "main"),
                                 ("<frozen runpy>", 88, "_run_code")))
    assert spinning["where"] == "outside" and spinning["top"][0] == "spin (smoke/tiny_train.py:61)"
    waiting = parse_dump(frames((C10D, 3252, "all_reduce"), (LOGGER, 83, "wrapper"),
                                ("/job/smoke/tiny_train.py", 97, "main"), ("<frozen runpy>", 88, "_run_code")))
    assert (waiting["where"], waiting["op"]) == ("collective", "all_reduce")
    inner_torch = parse_dump(frames(("/x/torch/distributed/distributed_c10d.py", 10, "_check_single_tensor"),
                                    (C10D, 3252, "all_reduce"), ("/job/train.py", 5, "main")))
    assert inner_torch["where"] == "collective"  # torch's own frames above the collective: still waiting
    syncing = parse_dump(frames(("/x/torch/cuda/__init__.py", 1162, "synchronize"), ("/job/train.py", 5, "main")))
    assert (syncing["where"], syncing["op"]) == ("cuda-wait", "synchronize")


def test_stack_reader_on_garbage():
    assert parse_dump("") is None
    assert parse_dump("Thread 0x1 (most recent call first):\n" + '  File "x", line 99999999999 in f\n' * 3) \
        == {"threads": 1, "where": "outside", "op": None, "top": []}


def two_rank_job(tmp_path, **extra):
    """A watched stage without Slurm: two ranks of the real functional loop (gloo), named node1 and
    node2, each with its agent, and the monitor; SMOKE_HANG_AFTER=5."""
    out = tmp_path / "run"
    watch = out / "watch" / "train"
    watch.mkdir(parents=True)
    base = {**os.environ, "PYTHONPATH": str(ROOT / "scripts"), "SMOKE_OUT": str(out), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(30000 + os.getpid() % 1000), "WORLD_SIZE": "2", "LOCAL_RANK": "0",
            "SMOKE_WATCH_DIR": str(watch), "SMOKE_FUNCTIONAL_STEP_MS": "100", "SMOKE_TEST_FAULTS": "1", **extra}
    procs, ranks = [], []
    for rank in range(2):
        env = {**base, "SLURMD_NODENAME": f"node{rank + 1}", "RANK": str(rank)}
        proc = subprocess.Popen([sys.executable, "-u", "-m", "smoke.watchdog.inrank", "-m", "smoke.tiny_train",
                                 "--steps", "100000", "--out", str(out / "functional")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ranks.append(proc)
        procs.append(subprocess.Popen([sys.executable, "-m", "smoke.watchdog.agent", "--run-dir", str(out),
                                       "--stage", "train", "--parent", str(proc.pid)], env=env))
    monitor = subprocess.Popen([sys.executable, "-m", "smoke.watchdog.monitor", "--run-dir", str(out), "--stage",
                                "train", "--mode", "functional", "--shell-pid", str(os.getpid())],
                               env={**base, "SLURM_JOB_NODELIST": "node[1-2]", "SMOKE_HANG_AFTER": "5",
                                    "SMOKE_HANG_EVIDENCE": "10"}, stdout=subprocess.PIPE, text=True)
    return out, ranks, procs + ranks, monitor


def wait_for_steps(out, steps=5, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        beats = list((out / "watch" / "train").glob("*.beat"))
        values = [int((b.read_text().split() or ["0"])[0]) for b in beats]
        if len(values) == 2 and min(values) >= steps:
            return
        time.sleep(0.5)
    raise AssertionError("the two ranks made no progress")


@pytest.mark.parametrize("fault,layer", [(signal.SIGSTOP, "unresponsive"), (signal.SIGUSR2, "rank")])
def test_real_ranks_stopped_or_spinning_are_named(tmp_path, fault, layer):
    out, ranks, procs, monitor = two_rank_job(tmp_path)
    try:
        wait_for_steps(out)
        ranks[1].send_signal(fault)
        stdout, _ = monitor.communicate(timeout=60)
        hang = json.loads((out / "hang.json").read_text())
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert [(c["node"], c["rank"], c["layer"]) for c in hang["culprits"]] == [("node2", 1, layer)], hang
    assert hang["stalled_s"] < 30 and "node2 rank 1" in stdout
    if layer == "rank":
        assert hang["culprits"][0]["doing"][0].startswith("spin (smoke/tiny_train.py")


def test_healthy_ranks_are_never_stopped(tmp_path):
    out, ranks, procs, monitor = two_rank_job(tmp_path)
    try:
        wait_for_steps(out, steps=3)
        time.sleep(12)  # more than twice SMOKE_HANG_AFTER with steady progress
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(timeout=20)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert not (out / "hang.json").exists()
    assert json.loads((out / "watch" / "train" / "monitor.json").read_text())["state"] == "stage ended"


@pytest.mark.parametrize("installed, env, expected", [
    ("2.5.1+cu124", {}, {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}),   # off by default before 2.6
    ("2.7.0a0+79aa17489c.nv25.04", {}, {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}),
    ("2.8.0", {}, {}),                                                # on by default, and the old name warns
    ("2.11.0+cu130", {}, {}),
    ("2.5.1", {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}),  # the user's choice
    ("2.5.1", {"TORCH_FR_BUFFER_SIZE": "10"}, {"TORCH_FR_BUFFER_SIZE": "10"}),
    ("local-build", {}, {}),
])
def test_flight_recorder_is_turned_on_only_where_torch_leaves_it_off(monkeypatch, installed, env, expected):
    import importlib.metadata
    from smoke.watchdog import beat
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed)
    beat.enable_flight_recorder(env)
    assert env == expected


def test_progress_reads_beats_and_iteration_lines_and_never_blocks_on_a_fifo(tmp_path):
    from smoke.watchdog.monitor import Progress
    (tmp_path / "watch" / "megatron").mkdir(parents=True)
    progress = Progress(str(tmp_path), "watch/megatron", "megatron.log")
    assert progress.poll() == 0
    (tmp_path / "megatron.log").write_text(" [2026-12-04] iteration        1/      10 | loss 9.1\n0: iteration 2/10 |")
    (tmp_path / "watch" / "megatron" / "node1.rank-0.beat").write_text("           3 1.0\n")
    assert progress.poll() == 2  # one complete iteration line (the second has no newline yet), one beat
    with open(tmp_path / "megatron.log", "a") as log:
        log.write(" loss 8.0\n")
    assert progress.poll() == 1 and progress.poll() == 0
    (tmp_path / "megatron.log").unlink()
    os.mkfifo(tmp_path / "megatron.log")  # written in the image's place: must not block the monitor
    (tmp_path / "watch" / "megatron" / "node1.rank-0.beat").unlink()
    (tmp_path / "watch" / "megatron" / "node1.rank-0.beat").symlink_to(tmp_path / "elsewhere")
    assert progress.poll() == 0


# --- localization's steps (smoke.watchdog.steps, driven by smoke.localize.driver.wait_all) ---

def _beat(folder, node, rank, step):
    (folder / f"{node}.rank-{rank}.beat").write_text(f"{step:12d} {time.time():.3f}\n")


def test_a_localization_step_that_stops_beating_is_ended_after_hang_after_not_the_step_timeout(tmp_path, monkeypatch):
    """A real process stands for the step's srun; one rank beat and then nothing: the watchdog ends
    the step 2 s later (SMOKE_HANG_AFTER=2), not after the 60 s step timeout, and records the stall."""
    from smoke.localize import driver
    from smoke.watchdog.steps import StepWatch
    monkeypatch.setenv("SMOKE_HANG_AFTER", "2")
    monkeypatch.setenv("SMOKE_HANG_EVIDENCE", "1")
    monkeypatch.setenv("SLURM_JOB_ID", "0")
    monkeypatch.setattr(driver, "KILL_GRACE_S", 0.5)
    watch = StepWatch(str(tmp_path), "functional")
    env = watch.env_for("localize-node")
    folder = tmp_path / "watch" / "localize-node"
    assert env["SMOKE_WATCH_DIR"] == str(folder) and env["SMOKE_STAGE"] == "localize-node"
    _beat(folder, "node2", 3, 1)
    step = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    begin = time.monotonic()
    driver.wait_all([("localize-node", step)], 60, watch, lambda _name: ["node2"])
    took = time.monotonic() - begin
    assert step.poll() is not None
    assert 2 <= took < 10, took
    [stall] = watch.stalls
    assert stall["step"] == "localize-node" and stall["asked"] == ["node2"] and stall["limit_s"] == 2
    # no agent answered: nobody is pinned on, the stall is said as such
    assert stall.get("culprits") == [] and stall.get("job_wide")


def test_a_step_that_keeps_beating_or_never_beat_is_left_to_its_time_limit(tmp_path, monkeypatch):
    from smoke.localize import driver
    from smoke.watchdog.steps import StepWatch
    monkeypatch.setenv("SMOKE_HANG_AFTER", "1")
    monkeypatch.setenv("SLURM_JOB_ID", "0")
    monkeypatch.setattr(driver, "KILL_GRACE_S", 0.5)
    watch = StepWatch(str(tmp_path), "functional")
    watch.env_for("localize-g1")
    watch.env_for("localize-g2")
    folder = tmp_path / "watch" / "localize-g1"
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    begin = time.monotonic()
    import threading
    done = threading.Event()

    def keep_beating():
        step = 0
        while not done.is_set():
            step += 1
            _beat(folder, "node1", 0, step)
            time.sleep(0.3)
    beater = threading.Thread(target=keep_beating, daemon=True)
    beater.start()
    try:
        driver.wait_all([("localize-g1", slow), ("localize-g2", silent)], 4, watch, lambda _name: [])
    finally:
        done.set()
    assert time.monotonic() - begin >= 4  # ended by the time limit, not by the watchdog
    assert watch.stalls == []


@pytest.mark.parametrize("env, on", [({}, True), ({"SMOKE_WATCHDOG": "0"}, False),
                                     ({"SMOKE_WATCH_STAGES": "probe megatron"}, False),
                                     ({"SMOKE_WATCH_STAGES": "localize"}, True)])
def test_localization_is_watched_unless_turned_off(env, on):
    from smoke.watchdog.steps import enabled
    assert enabled(env) is on


def test_a_step_name_that_is_not_a_stage_name_gets_no_watch_folder(tmp_path):
    from smoke.watchdog.steps import StepWatch
    watch = StepWatch(str(tmp_path), "functional")
    assert watch.env_for("../escape") == {}
    assert not (tmp_path / "escape").exists() and watch.stalled("../escape") is False


def test_the_agent_waits_for_a_late_stack_dump_not_a_fixed_moment(tmp_path):
    """A spinning rank on a loaded node dumped after the agent had read its file (the hang matrix:
    every peer reachable at once, so the TCP checks used no time and the fixed wait was 0 s): the
    agent now waits until the dump lands, at most until its deadline."""
    import threading

    from smoke.watchdog.agent import wait_for_dumps
    stack = tmp_path / "node4.rank-7.stack"
    stack.write_text("")
    timer = threading.Timer(1.0, lambda: stack.write_text('Current thread 0x1 (most recent call first):\n'))
    timer.start()
    begin = time.monotonic()
    wait_for_dumps(str(tmp_path), "node4", {7: 0}, begin + 5)
    took = time.monotonic() - begin
    assert stack.stat().st_size > 0 and 1.0 <= took < 3, took
    begin = time.monotonic()
    wait_for_dumps(str(tmp_path), "node4", {7: stack.stat().st_size}, begin + 1.0)  # never grows: the deadline
    assert 1.0 <= time.monotonic() - begin < 2


def test_a_watched_localization_step_is_no_warn_row_in_the_verdict(tmp_path):
    """Each localization step's watch folder carries the watchdog's status as a stage's does: the
    verdict's `watchdog <stage>` row warns only when it is missing or failed."""
    from smoke.verdict import hang
    from smoke.watchdog.steps import StepWatch
    watch = StepWatch(str(tmp_path), "functional")
    watch.env_for("localize-node")
    assert hang.rows(str(tmp_path)) == []
    (tmp_path / "watch" / "localize-g1").mkdir(parents=True)  # a folder without the status: said
    assert [(r.check, r.state) for r in hang.rows(str(tmp_path))] == [("watchdog localize-g1", "WARN")]
