"""Inline suppression: `# validator: disable=RULE[,RULE] -- reason`.

On a line of its own it covers the next line that is not a comment; at the end of a line it
covers that line. `# validator: disable-file=RULE -- reason` covers the whole file.

Each RULE is an exact rule id (or a shellcheck code such as SC2086): a wildcard or an id that no
rule has is itself a finding (`suppression-unknown-rule`), as ruff's RUF102 does, so a typo
cannot silently suppress nothing and `*` cannot suppress everything.

Lines are counted as the tool that reports a finding counts them: a script's only at `\n` (bash,
shellcheck and tree-sitter treat a vertical tab, form feed or U+2028 as an ordinary character), a
manifest's at every YAML 1.1 line break (PyYAML also breaks at CR, NEL, U+2028 and U+2029).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from validator.findings import Finding

_DIRECTIVE = re.compile(r"#\s*validator:\s*disable(-file)?=(\S*)\s*(?:--\s*(\S.*))?$")
SCRIPT_BREAKS = re.compile(r"\n")
YAML_BREAKS = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
SHELLCHECK_CODE = re.compile(r"SC[1-3][0-9]{3}\Z")


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)
    whole_file: set[str] = field(default_factory=set)
    problems: list[Finding] = field(default_factory=list)


def known_rule(name: str) -> bool:
    from validator.rules import BY_ID

    return name in BY_ID or bool(SHELLCHECK_CODE.match(name))


def parse_suppressions(text: str, display: str, breaks: re.Pattern = SCRIPT_BREAKS) -> Suppressions:
    out = Suppressions()
    pending: set[str] = set()
    for number, line in enumerate(breaks.split(text), start=1):
        if "validator:" not in line:  # cheap test first: most lines carry no directive
            match = None
        else:
            match = _DIRECTIVE.search(line)
        stripped = line.strip()
        if match:
            rules = set()
            for name in (r for r in match.group(2).split(",") if r):
                if known_rule(name):
                    rules.add(name)
                    continue
                why = ("wildcards are not allowed: name each rule" if any(c in name for c in "*?[")
                       else "no rule has this id ('python -m validator rules' lists them)")
                out.problems.append(Finding(display, number, match.start(2) + 1, "error", "suppression-unknown-rule",
                                            f"suppression of '{name[:80]}': {why}"))
            if not match.group(2).strip(","):
                out.problems.append(Finding(display, number, match.start() + 1, "error", "suppression-unknown-rule",
                                            "suppression names no rule"))
            if not match.group(3):
                out.problems.append(Finding(display, number, match.start() + 1, "warning", "suppression-reason",
                                            "suppression without a reason: add ' -- why' after the rule list"))
            if match.group(1):
                out.whole_file |= rules
            elif stripped.startswith("#"):
                pending |= rules
            else:
                out.by_line.setdefault(number, set()).update(rules)
            continue
        if pending and stripped and not stripped.startswith("#"):
            out.by_line.setdefault(number, set()).update(pending)
            pending = set()
    return out
