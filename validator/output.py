"""Printing findings: text (gcc style), JSON, GitHub workflow commands, SARIF 2.1.0."""
from __future__ import annotations

import json

from validator import __version__
from validator import rules as registry
from validator.findings import Finding


def render(findings: list[Finding], fmt: str) -> str:
    if fmt == "text":
        return "".join(f.as_text() + "\n" for f in findings)
    if fmt == "json":
        return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"
    if fmt == "github":
        level = {"error": "error", "warning": "warning", "info": "notice"}
        return "".join(
            f"::{level[f.severity]} file={_gh(f.path)},line={f.line},col={f.col},title={f.rule}::{_gh(f.message)}\n"
            for f in findings)
    if fmt == "sarif":
        return json.dumps(_sarif(findings), indent=2) + "\n"
    raise ValueError(fmt)


def _gh(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(",", "%2C").replace("::", "%3A%3A")


def _sarif(findings: list[Finding]) -> dict:
    level = {"error": "error", "warning": "warning", "info": "note"}
    used = sorted({f.rule for f in findings})
    rules = []
    for rule_id in used:
        rule = registry.BY_ID.get(rule_id)
        text = rule.description if rule else "shellcheck check, see https://www.shellcheck.net/wiki/" + rule_id
        rules.append({"id": rule_id, "shortDescription": {"text": text}})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "preset-validator", "version": __version__, "rules": rules}},
            "results": [{
                "ruleId": f.rule,
                "level": level[f.severity],
                "message": {"text": f.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": f.path},
                    "region": {"startLine": f.line, "startColumn": f.col}}}],
            } for f in findings],
        }],
    }
