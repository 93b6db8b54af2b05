"""The hang watchdog on a GPU (issue 26): what one GPU can show of it.

    PYTHONPATH=scripts python bench/watchdog_gpu.py [--out DIR]

1. Cost: a bf16 transformer training step (8 layers, hidden 2048, 8 x 1024 tokens, AdamW, the
   gradients all-reduced over NCCL) timed in alternating blocks without and with the watchdog's rank
   side (heartbeat per step, the request thread, faulthandler registered); medians and the ratio.
   Also beat() alone, per call.
2. Stall: a real NCCL rank (world of one: one GPU) in a loop of all-reduces with heartbeats, its
   agent and the monitor (SMOKE_HANG_AFTER=10): (a) the rank SIGSTOPped -> named unresponsive;
   (b) the rank stuck waiting on the GPU (torch.cuda._sleep of minutes, then a synchronize) -> the
   stack collected shows the wait, NCCL's flight recorder is dumped, the stall is job-wide (one rank
   that waits on its own GPU has no peer to compare with).
Prints numbers and writes DIR/watchdog-gpu.json.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RANK_LOOP = r"""
import os, sys, time, torch, torch.distributed as dist
from smoke.watchdog.beat import beat
torch.cuda.set_device(0)
dist.init_process_group("nccl")
x = torch.ones(64 * 2**20 // 2, dtype=torch.bfloat16, device="cuda")
step = 0
while True:
    step += 1
    dist.all_reduce(x)
    torch.cuda.synchronize()
    beat(step)
    time.sleep(0.05)
    if step == 40 and os.environ.get("STUCK") == "1":
        torch.cuda._sleep(int(3e12))  # minutes of GPU cycles: the rank waits on its own GPU
        torch.cuda.synchronize()
"""


def cost(blocks: int, steps: int) -> dict:
    import torch
    import torch.distributed as dist
    from smoke.watchdog import beat as beat_mod
    torch.cuda.set_device(0)
    if not dist.is_initialized():
        dist.init_process_group("nccl")
    layers = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(2048, 16, 8192, batch_first=True, dropout=0.0)
                                   for _ in range(8)]).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(layers.parameters(), lr=1e-4)
    x = torch.randn(8, 1024, 2048, device="cuda", dtype=torch.bfloat16)

    def step(watched: bool, i: int):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = layers(x).float().pow(2).mean()
        loss.backward()
        for p in layers.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        if watched:
            beat_mod.beat(i)
        return time.perf_counter() - start
    for i in range(5):
        step(False, i)
    plain, watched = [], []
    started = False
    for b in range(blocks):
        for i in range(steps):
            plain.append(step(False, i))
        if not started:
            started = beat_mod.start()  # SMOKE_WATCH_DIR is set by main(): the rank side from here on
        for i in range(steps):
            watched.append(step(True, b * steps + i))
    calls = 100000
    begin = time.perf_counter()
    for i in range(calls):
        beat_mod.beat(i)
    per_beat = (time.perf_counter() - begin) / calls
    p, w = statistics.median(plain), statistics.median(watched)
    return {"installed": started, "step_ms_without": round(p * 1e3, 3), "step_ms_with": round(w * 1e3, 3),
            "overhead_pct": round(100 * (w - p) / p, 3), "beat_us": round(per_beat * 1e6, 3),
            "beat_share_of_step_pct": round(100 * per_beat / p, 5), "steps_each": len(plain)}


def stall(tmp: Path, stuck: bool) -> dict:
    out = tmp / ("stuck" if stuck else "stopped")
    watch = out / "watch" / "train"
    watch.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts"), "SMOKE_OUT": str(out), "SMOKE_WATCH_DIR": str(watch),
           "SLURMD_NODENAME": "gpu1", "SLURM_JOB_NODELIST": "gpu1", "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + (7 if stuck else 3)),
           "STUCK": "1" if stuck else "0",  # the flight recorder as the rank side leaves it (beat.enable_flight_recorder)
           "SMOKE_HANG_AFTER": "10", "SMOKE_HANG_EVIDENCE": "15"}
    script = tmp / "rank_loop.py"
    script.write_text(RANK_LOOP)
    rank = subprocess.Popen([sys.executable, "-u", "-m", "smoke.watchdog.inrank", str(script)], env=env)
    agent = subprocess.Popen([sys.executable, "-m", "smoke.watchdog.agent", "--run-dir", str(out), "--stage", "train",
                              "--parent", str(rank.pid)], env=env)
    monitor = subprocess.Popen([sys.executable, "-m", "smoke.watchdog.monitor", "--run-dir", str(out), "--stage",
                                "train", "--mode", "full", "--shell-pid", str(os.getpid())], env=env,
                               stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = (watch / "gpu1.rank-0.beat").read_text() if (watch / "gpu1.rank-0.beat").exists() else ""
            if text.split() and int(text.split()[0]) >= 30:
                break
            time.sleep(0.5)
        fault_at = time.time()
        if not stuck:
            rank.send_signal(signal.SIGSTOP)
        monitor.wait(timeout=120)
        hang = json.loads((out / "hang.json").read_text())
        evidence = json.loads((watch / "gpu1.evidence.json").read_text())
        fr_path = watch / "gpu1.rank-0.fr.json"
        fr = json.loads(fr_path.read_text()) if fr_path.exists() else None
    finally:
        for p in (rank, agent, monitor):
            p.kill()
            p.wait()
    decided = (out / "hang.json").stat().st_mtime - fault_at
    return {"culprits": hang["culprits"], "job_wide": hang["job_wide"], "stalled_s": hang["stalled_s"],
            "decided_after_fault_s": round(decided, 1), "rank_evidence": evidence["ranks"].get("0"),
            "flight_recorder_entries": len((fr or {}).get("entries") or []), "flight_recorder_last": ((fr or {}).get("entries") or [None])[-1],
            "flight_recorder_error": (fr or {}).get("error")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("watchdog_gpu: no GPU here", file=sys.stderr)
        return 2
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for key, stuck in (("stall_stopped", False), ("stall_gpu_wait", True)):
            result[key] = stall(tmp, stuck)
            print(key, json.dumps(result[key], indent=1), flush=True)
        os.environ.update({"SMOKE_WATCH_DIR": str(tmp / "cost"), "SLURMD_NODENAME": "gpu1", "RANK": "0",
                           "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531"})
        result["cost"] = cost(args.blocks, args.steps)
        print("cost", json.dumps(result["cost"], indent=1), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "watchdog-gpu.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
