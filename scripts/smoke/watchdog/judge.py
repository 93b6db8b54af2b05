"""From the evidence every node's agent wrote after a stall to the culprit: a node and rank, a
layer and what it was doing, or a job-wide stall with nobody named. Pure: the monitor reads the
files, this decides (tests/test_watchdog.py feeds it the evidence of each fault).

In order, the first rule that names somebody decides:
1. a rank that is stopped (T: SIGSTOP, a debugger) or gone while its peers wait: `unresponsive`;
2. a rank in uninterruptible sleep (D) at both looks: `gpu` on GPUs (a driver call that does not
   return), else `unresponsive`;
3. a node that reaches no peer's agent and that no peer reaches, while the others reach each other:
   `network` (with two nodes the two sides cannot be told apart: job-wide);
4. a node whose agent published itself but wrote no evidence: `unresponsive`;
5. ranks outside any collective while their peers wait in one: `rank`. On CPUs (gloo) from their
   stacks, since gloo blocks inside the collective's own Python frame; on GPUs only from NCCL's flight
   recorder (ranks whose last collective is behind their peers'), since a rank waiting for NCCL sits
   in whatever line synchronises (`.item()`, a copy), which a stack cannot tell from its own code;
otherwise the stall is job-wide. More than half the nodes named is job-wide too (the suspects rule).
"""
from __future__ import annotations

STOPPED = {"T", "t"}
GONE = {"Z", "X", "gone"}
WAITING = {"collective", "cuda-wait"}


def judge(nodes: list[str], published: set[str], evidence: dict[str, dict | None], cuda: bool = False,
          flight: dict[int, dict] | None = None) -> dict:
    """nodes: the allocation; published: nodes whose agent wrote <node>.agent.json; evidence: node ->
    its evidence (None when it wrote none); flight: rank -> its flight recorder summary (NCCL)."""
    answered = {n: e for n, e in evidence.items() if isinstance(e, dict) and n in nodes}
    ranks: dict[int, tuple[str, dict]] = {}
    for node, e in answered.items():
        for key, info in (e.get("ranks") or {}).items():
            if isinstance(info, dict) and str(key).isdigit():
                ranks[int(key)] = (node, info)
    culprits: list[dict] = []

    def name(node: str, layer: str, reason: str, rank: int | None = None, doing: list | None = None):
        culprits.append({"node": node, "rank": rank, "layer": layer, "reason": reason, "doing": doing or []})

    # 1, 2: process states
    for rank, (node, info) in sorted(ranks.items()):
        state, after = info.get("state"), info.get("state_after", info.get("state"))
        if state in STOPPED:
            name(node, "unresponsive", f"rank {rank} (pid {info.get('pid')}) is stopped (state T: SIGSTOP or a "
                                       "debugger) while its peers wait for it", rank)
        elif state in GONE:
            name(node, "unresponsive", f"rank {rank} (pid {info.get('pid')}) is gone ({state}) while its peers "
                                       "wait for it", rank)
        elif state == "D" and after == "D":
            wchan = info.get("wchan") or "?"
            name(node, "gpu" if cuda else "unresponsive",
                 f"rank {rank} (pid {info.get('pid')}) is in uninterruptible sleep in the kernel (wchan {wchan}): "
                 f"{'a GPU driver call' if cuda else 'a kernel call'} that does not return", rank)
    if not culprits:
        # 3: reachability between the agents of the nodes that answered
        tried = {n: {p: ok for p, ok in (e.get("reach") or {}).items() if isinstance(ok, bool)}
                 for n, e in answered.items()}
        isolated = []
        for node in published & set(nodes):
            asked = [t[node] for n, t in tried.items() if n != node and node in t]
            own = list(tried.get(node, {}).values())
            if asked and not any(asked) and (not own or not any(own)):
                isolated.append(node)
        others = [n for n in tried if n not in isolated]
        others_fine = any(ok for n in others for p, ok in tried[n].items() if p in others)
        if isolated and (others_fine or (len(others) == 1 and len(nodes) == 2 and len(isolated) == 1)):
            for node in sorted(isolated):
                if len(nodes) == 2:
                    break  # two nodes that cannot reach each other: which side is at fault is unknowable
                name(node, "network", "reaches no peer's watchdog agent over TCP and no peer reaches it, while "
                                      "the other nodes reach each other: its network path is cut")
        if len(nodes) == 2 and isolated:
            return _decision(nodes, ranks, [], "the two nodes of the job cannot reach each other over TCP: a network "
                                               "fault between them (with two nodes, which side cannot be told)")
        if len(isolated) == len(tried) > 1:
            return _decision(nodes, ranks, [], "no node reaches another node's watchdog agent over TCP: a job-wide "
                                               "network fault (or a firewall between the nodes)")
    if not culprits:
        # 4: silent nodes
        for node in sorted(published & set(nodes) - set(answered)):
            name(node, "unresponsive", "its watchdog agent published itself at the stage's start but wrote no "
                                       "evidence when asked (the node or its file system does not answer)")
    if not culprits:
        # 5: who is not in the collective its peers wait in
        where = {r: (info.get("stack") or {}).get("where") for r, (_, info) in ranks.items()}
        waiting = [r for r, w in where.items() if w in WAITING]
        outside = [r for r, w in where.items() if w == "outside"]
        if not cuda and waiting and outside:  # gloo blocks inside the collective's Python frame
            for rank in outside:
                node, info = ranks[rank]
                top = (info.get("stack") or {}).get("top") or []
                name(node, "rank", f"rank {rank} is outside any collective (at {top[0] if top else '?'}) while "
                                   f"{len(waiting)} peer(s) wait in {_ops(ranks, waiting)}", rank, top)
        elif flight:
            behind = _behind(flight)
            if behind and len(behind) * 2 < len(flight):
                for rank, seq, peers_seq in behind:
                    node = ranks[rank][0] if rank in ranks else None
                    if node:
                        name(node, "rank", f"rank {rank}'s last collective is #{seq} while its peers are at "
                                           f"#{peers_seq} (NCCL flight recorder): it never entered the one they wait in",
                             rank, ((ranks[rank][1].get("stack") or {}).get("top") or []))
    named_nodes = {c["node"] for c in culprits}
    if culprits and len(nodes) > 1 and len(named_nodes) * 2 > len(nodes):
        return _decision(nodes, ranks, [], f"{len(named_nodes)} of {len(nodes)} nodes would be named "
                                           f"({culprits[0]['reason']}): a job-wide cause, not nodes to exclude")
    if culprits:
        return _decision(nodes, ranks, culprits, None)
    if not ranks:
        return _decision(nodes, ranks, [], "no rank had started (or none reported): the stage stalled before "
                                           "training, in the launcher or the rendezvous")
    waiting = [r for r, (_, i) in ranks.items() if (i.get("stack") or {}).get("where") in WAITING]
    if waiting:
        why = f"every rank that answered waits in {_ops(ranks, waiting)}; no rank or node stands out"
    else:
        why = "no rank is in a collective and none stands out: the stall is in the program itself"
    return _decision(nodes, ranks, [], why)


def _ops(ranks: dict, which: list[int]) -> str:
    ops = sorted({str((ranks[r][1].get("stack") or {}).get("op")) for r in which})
    return ", ".join(ops[:4])


def _behind(flight: dict[int, dict]) -> list[tuple[int, int, int]]:
    last = {}
    for rank, summary in flight.items():
        seqs = [e.get("seq") for e in (summary.get("entries") or []) if isinstance(e, dict)
                and isinstance(e.get("seq"), int)]
        if seqs:
            last[rank] = max(seqs)
    if len(last) < 2:
        return []
    top = max(last.values())
    return [(r, s, top) for r, s in sorted(last.items()) if s < top]


def _decision(nodes: list[str], ranks: dict, culprits: list[dict], job_wide: str | None) -> dict:
    table = {str(r): {"node": node, "state": info.get("state"),
                      "where": (info.get("stack") or {}).get("where"), "op": (info.get("stack") or {}).get("op"),
                      "top": ((info.get("stack") or {}).get("top") or [])[:3]}
             for r, (node, info) in sorted(ranks.items())}
    return {"culprits": culprits, "job_wide": job_wide, "nodes": len(nodes), "ranks": table}
