"""Slurm's names for things: this node, hostlists, the job's allocation, the rendezvous port.

    python -m smoke.slurm port JOB_ID           the job's rendezvous port (job-lib's MASTER_PORT)
"""
from __future__ import annotations

import os
import re
import socket
import sys

from smoke import vocab

# A Slurm node name as scontrol, --exclude and drain take it. Slurm itself allows more, but every name
# written into exclude.txt or drain.sh must also be harmless in a shell and a hostlist.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# Names slurmctld expands to many nodes (scontrol update NodeName=ALL drains the cluster).
RESERVED = {"ALL", "all"}


def node_name() -> str:
    """This node as Slurm names it (SLURMD_NODENAME, set in every task's environment), which is what
    scontrol, --exclude and drain take. The host name can differ (an FQDN, a NodeHostname): reports
    filed under it would make every node look unresponsive."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def hostlist(nodes) -> str:
    """Slurm's compressed form: ['node3', 'node17', 'node4'] -> 'node[3-4,17]'; '' for none."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    plain = []
    for node in sorted(set(nodes)):
        match = re.fullmatch(r"(.*?)(\d+)([^\d]*)", node)
        if not match or match.group(3):
            plain.append(node)
            continue
        groups.setdefault((match.group(1), match.group(3)), []).append((int(match.group(2)), match.group(2)))
    parts = list(plain)
    for (prefix, suffix), numbers in sorted(groups.items()):
        numbers.sort()
        ranges, start = [], 0
        for i in range(1, len(numbers) + 1):
            padded = i < len(numbers) and "0" in (numbers[i][1][0], numbers[i - 1][1][0])
            if i == len(numbers) or numbers[i][0] != numbers[i - 1][0] + 1 or (
                    padded and len(numbers[i][1]) != len(numbers[i - 1][1])):
                first, last = numbers[start][1], numbers[i - 1][1]
                ranges.append(first if first == last else f"{first}-{last}")
                start = i
        parts.append(f"{prefix}{ranges[0]}{suffix}" if len(numbers) == 1 else f"{prefix}[{','.join(ranges)}]{suffix}")
    return ",".join(parts)


MAX_NODES = 1 << 17  # more than any cluster has: a longer expansion is refused, not built


class BadHostlist(ValueError):
    """A hostlist this parser does not take; the message says where."""


def _split_top(text: str) -> list[str]:
    """Split at the commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise BadHostlist(f"nested '[' at {i + 1}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise BadHostlist(f"unmatched ']' at {i + 1}")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise BadHostlist("unclosed '['")
    items.append(text[start:])
    return items


_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def _expand_item(item: str, budget: int) -> list[str]:
    """One hostlist item, 'gpu[01-03,7]x[1-2]' -> its names in Slurm's order (the product of its
    bracket groups, left to right)."""
    names = [""]
    for literal, inside in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", item):
        choices = [literal]
        if inside:
            choices = []
            for part in inside.split(","):
                m = _RANGE.fullmatch(part)
                if not m or not part.isascii():
                    raise BadHostlist(f"{part!r} is not a number or a range")
                first, last = m.group(1), m.group(2) or m.group(1)
                low, high = int(first), int(last)
                if high < low or high - low + len(choices) > budget:
                    raise BadHostlist(f"range {part!r} is reversed or longer than {budget} names")
                width = len(first) if first.startswith("0") and len(first) > 1 else 0
                choices += [f"{literal}{n:0{width}d}" for n in range(low, high + 1)]
        if len(names) * len(choices) > budget:
            raise BadHostlist(f"more than {budget} names")
        names = [a + b for a in names for b in choices]
    return names


def expand(nodelist: str) -> list[str]:
    """Slurm's hostlist expansion ('node[1-3,7],gpu01' -> node1 node2 node3 node7 gpu01), without
    scontrol: the batch host's SLURM_JOB_NODELIST is what defines the job's allocation. Duplicates
    dropped, order kept. BadHostlist for anything this does not take."""
    if not nodelist or not nodelist.isascii() or any(c.isspace() for c in nodelist):
        raise BadHostlist("empty, blank or not ASCII")
    out: dict[str, None] = {}
    for item in _split_top(nodelist):
        if not item:
            raise BadHostlist("an empty name")
        for name in _expand_item(item, MAX_NODES - len(out)):
            out[name] = None
    return list(out)


def allocation() -> list[str] | None:
    """The job's nodes, from the batch shell's SLURM_JOB_NODELIST; None when unset or unusable. Only
    these may ever be named a suspect: a stage writing the run folder cannot add a node (or ALL) to
    exclude.txt or drain.sh."""
    try:
        nodes = expand(os.environ.get("SLURM_JOB_NODELIST", ""))
    except BadHostlist:
        return None
    if not all(NODE_NAME.fullmatch(n) and n not in RESERVED for n in nodes):
        return None
    return nodes


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "port" and argv[1].isascii() and argv[1].isdigit():
        print(vocab.rendezvous_port(int(argv[1])))
        return 0
    print("usage: python -m smoke.slurm port JOB_ID", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
