"""One per node and stage: answers the monitor's request for evidence.

    python -m smoke.watchdog.agent --run-dir OUT --stage NAME --parent PID

torchrun-node starts it in the background before it execs torchrun (PID is then torchrun's); it
exits when that process is gone. It listens on a TCP port of its own (published in
<node>.agent.json) so that peers can tell whether they reach this node. On each new request it
writes <node>.evidence.json: for every rank of this node its process state (/proc/PID/stat: R
running, S sleeping, D uninterruptible, T stopped, Z or gone), its kernel wait channel and the top
of its Python stacks (faulthandler, through SIGUSR1), and which peers' agents this node reaches.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time

from smoke import runfolder
from smoke.runfolder import Unreadable
from smoke.slurm import node_name
from smoke.watchdog import layout
from smoke.watchdog.stacks import parse_dump

# faulthandler writes from the signal handler as soon as the rank runs again; on a loaded node that
# can take a while (the hang matrix with two jobs on two cores: a spinning rank's dump landed after a
# fixed wait that the TCP checks had already used up). Wait for every signalled rank's dump, at most this.
DUMP_WAIT_S = 5.0
CONNECT_TIMEOUT_S = 3.0
MAX_STACK_READ = 256 * 1024


def proc_state(pid: int) -> tuple[str, str]:
    """(state letter, wait channel) of a process; ("gone", "") when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read(4096).decode(errors="replace")
        state = stat[stat.rindex(")") + 2:].split()[0]
    except (OSError, ValueError, IndexError):
        return "gone", ""
    try:
        with open(f"/proc/{pid}/wchan", "rb") as handle:
            wchan = handle.read(128).decode(errors="replace").strip()
    except OSError:
        wchan = ""
    return state, ("" if wchan == "0" else wchan)


def listen() -> tuple[socket.socket, int]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))  # a free port, published: no clash with another job on the node
    server.listen(64)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                return
    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def my_address() -> str:
    """The address peers reach this node at: what its host name resolves to (the name torchrun's
    rendezvous also uses); the host name itself when it does not resolve here."""
    host = socket.gethostname()
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def reach(peers: dict[str, tuple[str, int]]) -> dict[str, bool]:
    """Which peers' agents accept a TCP connection within CONNECT_TIMEOUT_S, tried all at once."""
    result: dict[str, bool] = {}

    def attempt(peer, addr, port):
        try:
            with socket.create_connection((addr, port), timeout=CONNECT_TIMEOUT_S):
                result[peer] = True
        except OSError:
            result[peer] = False
    threads = [threading.Thread(target=attempt, args=(p, a, port), daemon=True) for p, (a, port) in peers.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CONNECT_TIMEOUT_S + 1)
    return {p: result.get(p, False) for p in peers}


def read_record(run_dir: str, relative: str) -> dict | None:
    """A JSON object of the run folder, None when missing or unusable (a rank or agent may be
    half-way through writing; the writers rename, so that is rare)."""
    try:
        value = runfolder.read_json(run_dir, relative, missing_ok=True)
    except Unreadable:
        return None
    return value if isinstance(value, dict) else None


def peers_of(run_dir: str, watch: str, me: str) -> dict[str, tuple[str, int]]:
    peers = {}
    for name in runfolder.list_dir(run_dir, watch, ".agent.json")[:4096]:
        node = name[:-len(".agent.json")]
        record = read_record(run_dir, f"{watch}/{name}")
        if node == me or not record:
            continue
        addr, port = record.get("addr"), record.get("port")
        if isinstance(addr, str) and isinstance(port, int) and 0 < port < 65536:
            peers[node] = (addr, port)
    return peers


def wait_for_dumps(folder: str, me: str, before: dict[int, int], deadline: float) -> None:
    """Until every signalled rank's stack file has grown (its dump landed), or the deadline; then a
    moment more for the dump's last lines (faulthandler writes them one by one)."""
    waiting = dict(before)
    while waiting and time.monotonic() < deadline:
        for rank, size in list(waiting.items()):
            try:
                if os.path.getsize(os.path.join(folder, layout.rank_file(me, rank, "stack"))) > size:
                    del waiting[rank]
            except OSError:
                pass
        if waiting:
            time.sleep(0.1)
    time.sleep(0.2)


def answer(run_dir: str, watch: str, me: str, request_id: int) -> dict:
    folder = os.path.join(run_dir, watch)
    ranks = {}
    sizes = {}
    signalled: list[int] = []
    signalled_at = time.monotonic()
    for name in runfolder.list_dir(run_dir, watch, ".json")[:4096]:
        match = layout.RANK_FILE.fullmatch(name)
        if not match or match["node"] != me or match["kind"] != "json":
            continue
        record = read_record(run_dir, f"{watch}/{name}")
        if not record or not isinstance(record.get("pid"), int):
            continue
        rank = int(match["rank"])
        pid = record["pid"]
        state, wchan = proc_state(pid)
        ranks[rank] = {"pid": pid, "local_rank": record.get("local_rank"), "state": state, "wchan": wchan}
        stack_path = os.path.join(folder, layout.rank_file(me, rank, "stack"))
        try:
            sizes[rank] = os.path.getsize(stack_path)
        except OSError:
            sizes[rank] = 0
        if state not in ("T", "t", "Z", "X", "gone"):  # a stopped process would dump only when continued
            try:
                os.kill(pid, signal.SIGUSR1)
                signalled.append(rank)
            except OSError:
                pass
    peers = peers_of(run_dir, watch, me)
    reached = reach(peers)  # takes up to CONNECT_TIMEOUT_S: the dumps land meanwhile
    wait_for_dumps(folder, me, {r: sizes[r] for r in signalled}, signalled_at + DUMP_WAIT_S)
    for rank, info in ranks.items():
        stack_path = os.path.join(folder, layout.rank_file(me, rank, "stack"))
        try:
            with open(stack_path, "rb") as handle:
                handle.seek(sizes[rank])
                text = handle.read(MAX_STACK_READ).decode(errors="replace")
        except OSError:
            text = ""
        info["stack"] = parse_dump(text) if text else None
        info["state_after"] = proc_state(info["pid"])[0]
    return {"node": me, "request": request_id, "t": time.time(), "ranks": {str(r): v for r, v in ranks.items()},
            "reach": reached}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--stage", required=True)
    parser.add_argument("--parent", type=int, required=True)
    args = parser.parse_args(argv)
    if not layout.STAGE.fullmatch(args.stage):
        print(f"watchdog agent: stage {args.stage[:40]!r} is not a stage name", file=sys.stderr)
        return 2
    watch, me = layout.stage_dir(args.stage), node_name()
    folder = os.path.join(args.run_dir, watch)
    try:
        os.makedirs(folder, exist_ok=True)
        _server, port = listen()
        runfolder.write_json(os.path.join(folder, layout.agent_file(me)),
                             {"node": me, "addr": my_address(), "port": port, "pid": os.getpid()})
    except OSError as exc:
        print(f"watchdog agent on {me}: not started ({exc}); the stage runs without it", file=sys.stderr)
        return 0
    answered = None
    while os.path.exists(f"/proc/{args.parent}"):
        time.sleep(1.0)
        request = read_record(args.run_dir, f"{watch}/{layout.REQUEST}")
        if not request or not isinstance(request.get("id"), int) or request["id"] == answered:
            continue
        answered = request["id"]
        try:
            runfolder.write_json(os.path.join(folder, layout.evidence_file(me)), answer(args.run_dir, watch, me, answered))
        except (OSError, ValueError) as exc:
            print(f"watchdog agent on {me}: could not write evidence ({exc})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
