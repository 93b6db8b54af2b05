"""Inline suppression: `# validator: disable=RULE[,RULE] -- reason`.

On a line of its own it covers the next line that is not a comment; at the end of a line it
covers that line. `# validator: disable-file=RULE -- reason` covers the whole file.
"""
from __future__ import annotations

import re

from validator.findings import Finding

_DIRECTIVE = re.compile(r"#\s*validator:\s*disable(-file)?=([A-Za-z0-9_,*-]+)\s*(?:--\s*(\S.*))?$")


def parse_suppressions(text: str, display: str) -> tuple[dict[int, set[str]], set[str], list[Finding]]:
    by_line: dict[int, set[str]] = {}
    whole_file: set[str] = set()
    problems: list[Finding] = []
    pending: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _DIRECTIVE.search(line)
        stripped = line.strip()
        if match:
            rules = {r for r in match.group(2).split(",") if r}
            if not match.group(3):
                problems.append(Finding(display, number, match.start() + 1, "warning", "suppression-reason",
                                        "suppression without a reason: add ' -- why' after the rule list"))
            if match.group(1):
                whole_file |= rules
            elif stripped.startswith("#"):
                pending |= rules
            else:
                by_line.setdefault(number, set()).update(rules)
            continue
        if pending and stripped and not stripped.startswith("#"):
            by_line.setdefault(number, set()).update(pending)
            pending = set()
    return by_line, whole_file, problems
