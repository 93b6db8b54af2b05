"""Adaptive group testing: which subsets of nodes to run as srun steps, round by round."""
from __future__ import annotations

import math
import statistics

from smoke.localize.stats import reference


class GroupSearch:
    """Adaptive group testing over nodes that passed their per-node checks.

    Round 1 runs disjoint groups of `group` nodes (default: pairs, larger groups once there would
    be more than max_steps of them, so one round is at most max_steps concurrent steps). A group
    is slow when its figure is below the reference (the median of the upper half of the round-1
    groups; their best when fewer than 3) by more than the threshold. A slow group of 4 or more is
    split in halves, tested next round; a slow group of 2 or 3 has each member tested in a pair with
    a node already known good, which confirms or clears it. Each node is in at most one step per
    round; a round runs at most max_steps steps (the rest wait for the next round).

    Bus bandwidth depends on how many nodes share the all-reduce: a pair is faster than a group of
    64. Halves and confirming pairs of another size than round 1's groups are therefore judged
    against control steps of their own size, run in the same round on nodes already known good
    (up to CONTROLS of them; their median, or best when fewer than 3), with round 1's relative limit.
    Without them a node 6 % slow, halved out of a group of 64 into groups of 32 and then paired,
    was cleared against the 64-node reference. Up to 128 nodes (pairs in round 1) nothing changes."""

    CONTROLS = 3

    def __init__(self, nodes: list[str], noise: float, floor: float, max_steps: int = 64, group: int | None = None):
        self.nodes = list(nodes)
        self.noise, self.floor, self.max_steps = noise, floor, max(2, max_steps)  # 1 step: no peer group
        size = group or max(2, math.ceil(len(nodes) / self.max_steps))
        self.queue: list[tuple[str, tuple[str, ...]]] = []  # (kind, members) still to test
        if len(nodes) == 3:  # no two disjoint groups: the three pairs, one after another
            self.queue = [("group", pair) for pair in ((nodes[0], nodes[1]), (nodes[1], nodes[2]), (nodes[0], nodes[2]))]
        elif len(nodes) >= 4:
            count = len(nodes) // size
            for i in range(count):  # sizes differ by at most one: no lone node
                self.queue.append(("group", tuple(self.nodes[i::count])))
        self.first_sizes = {len(members) for _, members in self.queue}  # judged by the round-1 reference
        self.initial: list = []  # round-1 results, judged together once every first group ran
        self.good: set[str] = set()
        self.suspects: dict[str, dict] = {}
        self.reference: float | None = None
        self.limit = 0.0
        self.by_size: dict[int, float] = {}  # reference measured by control steps, per step size
        self.rounds = self.steps = 0
        self.history: list[dict] = []
        self.job_level: list[str] = []  # what concerns the whole search, not one node

    def next_round(self) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """(kind, nodes under test, nodes the step runs on) for the next round; [] when done."""
        tests, busy, later = [], set(), []
        spare = [n for n in self.nodes if n in self.good]
        for kind, members in self.queue:
            if len(tests) >= self.max_steps or busy & set(members):
                later.append((kind, members))
                continue
            if kind == "confirm":
                partner = next((n for n in spare if n not in busy), None)
                if partner is None:
                    if not self.good:  # nobody is known good: nothing to compare against
                        self._name(members[0], None, "in a slow group; no node known good to confirm against")
                    else:
                        later.append((kind, members))
                    continue
                tests.append((kind, members, members + (partner,)))
                busy.update(members + (partner,))
            else:
                tests.append((kind, members, members))
                busy.update(members)
        self.queue = later
        if self.reference is not None:  # controls for sizes round 1 did not measure
            for size in sorted({len(ran_on) for _, _, ran_on in tests} - self.first_sizes - set(self.by_size)):
                for _ in range(self.CONTROLS):
                    free = [n for n in spare if n not in busy]
                    if len(tests) >= self.max_steps or len(free) < size:
                        break
                    tests.append(("control", (), tuple(free[:size])))
                    busy.update(free[:size])
        return tests

    def judge_by(self, size: int) -> tuple[float, float]:
        """(reference, limit) for a step of `size` nodes."""
        if size in self.by_size:
            ref = self.by_size[size]
            return ref, ref * self.limit / self.reference
        return self.reference, self.limit

    def record(self, results: list[tuple[str, tuple[str, ...], tuple[str, ...], float | None]]) -> None:
        """Feed one round's results: (kind, tested, ran_on, figure or None when the step failed)."""
        self.rounds += 1
        self.steps += len(results)
        if self.reference is None:
            self.initial += results
            if any(kind == "group" for kind, _ in self.queue):
                return
            results, self.initial = self.initial, []
            figures = [f for _, _, _, f in results if f]
            if not figures:  # no peer to compare with: a step-wide cause (a port, the container), not nodes
                self.job_level.append(f"every one of the {len(results)} first group tests failed: nothing to "
                                      "compare against (see localize.log)")
                self.queue = []
                return
            self.reference, self.limit = reference(figures, self.noise, self.floor)
        controls: dict[int, list[float]] = {}
        for kind, _tested, ran_on, figure in results:
            if kind == "control":
                self.history.append({"round": self.rounds, "kind": kind, "nodes": list(ran_on), "figure": figure,
                                     "slow": None})
                if figure:
                    controls.setdefault(len(ran_on), []).append(figure)
        for size, figures in controls.items():  # smaller groups are not slower: a control only raises the bar
            measured = statistics.median(figures) if len(figures) >= 3 else max(figures)
            self.by_size[size] = max(measured, self.reference)
        slow = []
        for kind, tested, ran_on, figure in results:
            if kind == "control":
                continue
            ref, limit = self.judge_by(len(ran_on))
            bad = figure is None or ref - figure > limit
            self.history.append({"round": self.rounds, "kind": kind, "nodes": list(ran_on),
                                 "figure": figure, "slow": bad, **({"reference": ref} if ref != self.reference else {})})
            if bad:
                slow.append((kind, tested, ran_on, figure))
            else:
                self.good.update(ran_on)
                for node in ran_on:
                    self.suspects.pop(node, None)
        for kind, tested, ran_on, figure in slow:
            if kind == "confirm":
                self._name(tested[0], figure, f"slow in a pair with {ran_on[-1]}, a node known good",
                           self.judge_by(len(ran_on))[0])
            elif len(tested) >= 4:
                half = len(tested) // 2
                self.queue += [("half", tested[:half]), ("half", tested[half:])]
            else:
                queued = {m for _, members in self.queue for m in members}
                self.queue += [("confirm", (node,)) for node in tested if node not in self.good and node not in queued]

    def _name(self, node, figure, reason, reference: float | None = None):
        self.suspects[node] = {"node": node, "figure": figure, "peers_median": reference or self.reference,
                               "reason": reason}

    def run(self, measure, max_rounds: int = 12) -> dict[str, dict]:
        """Drive the search with measure(list of (kind, tested, ran_on)) -> figures; returns suspects."""
        while self.queue and self.rounds < max_rounds:
            tests = self.next_round()
            if not tests:
                continue
            figures = measure(tests)
            self.record([t + (f,) for t, f in zip(tests, figures)])
        for kind, members in self.queue:  # out of rounds: name what is still open, and say so
            for node in members:
                if node not in self.good:
                    self._name(node, None, f"in a slow group, not narrowed within {max_rounds} rounds")
        self.queue = []
        return self.suspects


def simulate(n: int, bad: set[int], group: int | None = None, max_steps: int = 64) -> tuple[int, int, set[str]]:
    """The search as a dry run against an oracle (a step is slow when one of its nodes is bad), for
    the tests and the scale table (bench/localize_simulation.py). Returns (rounds, steps, named)."""
    nodes = [f"n{i}" for i in range(n)]
    bad_names = {f"n{i}" for i in bad}
    search = GroupSearch(nodes, noise=0.0, floor=0.05, max_steps=max_steps, group=group)
    found = search.run(lambda tests: [0.1 if set(ran_on) & bad_names else 1.0 for _, _, ran_on in tests],
                       max_rounds=64)
    return search.rounds, search.steps, set(found)
