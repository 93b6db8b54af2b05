"""Printing findings: text (gcc style), JSON, GitHub workflow commands, SARIF 2.1.0.

Paths and messages carry text from the input (values, file names). None of it may forge a finding
line, a workflow command or a terminal escape: control characters, line and paragraph separators,
bidirectional controls and lone surrogates (undecodable file-name bytes) are printed as visible
escapes (`\\n`, `\\x1b`, `\\u2028`; a file-name byte 0xff as `\\xff`) in every format.
"""
from __future__ import annotations

import json
import os
import re
from urllib.parse import quote

from validator import __version__
from validator.findings import Finding

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(match: re.Match) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """Text that prints as one line and cannot drive a terminal."""
    return _UNSAFE.sub(_escape_one, text)


def _safe(f: Finding) -> Finding:
    path, message = escape(f.path), escape(f.message)
    if path == f.path and message == f.message:
        return f
    return Finding(path, f.line, f.col, f.severity, f.rule, message, f.unusable)


def _text(findings: list[Finding]) -> str:
    return "".join(_safe(f).as_text() + "\n" for f in findings)


def _json(findings: list[Finding]) -> str:
    return json.dumps([_safe(f).as_dict() for f in findings], indent=2) + "\n"


def _github(findings: list[Finding]) -> str:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    return "".join(
        f"::{level[f.severity]} file={gh_property(escape(f.path))},line={f.line},col={f.col},"
        f"title={gh_property(f.rule)}::{gh_data(escape(f.message))}\n"
        for f in findings)


def _sarif_text(findings: list[Finding]) -> str:
    return json.dumps(_sarif(findings), indent=2) + "\n"


# The output formats, once: --format's choices, the tests' list and render() read this table.
FORMATS = {"text": _text, "json": _json, "github": _github, "sarif": _sarif_text}
# Formats whose whole output is one JSON document.
JSON_FORMATS = ("json", "sarif")


def render(findings: list[Finding], fmt: str) -> str:
    return FORMATS[fmt](findings)


def gh_data(text: str) -> str:
    """A workflow command's message, escaped as @actions/core's escapeData does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: str) -> str:
    """A workflow command's property value, escaped as @actions/core's escapeProperty does."""
    return gh_data(text).replace(":", "%3A").replace(",", "%2C")


def sarif_uri(path: str) -> str:
    """A SARIF artifactLocation.uri: a relative reference or a file: URI, percent-encoded (RFC 3986)."""
    try:
        raw = os.fsencode(path)  # undecodable file-name bytes come back as the bytes they were
    except UnicodeError:
        raw = path.encode("utf-8", "surrogatepass")
    if os.sep != "/":
        raw = raw.replace(os.fsencode(os.sep), b"/")
    encoded = quote(raw, safe="/")
    return "file://" + encoded if raw.startswith(b"/") else encoded


def _sarif(findings: list[Finding]) -> dict:
    from validator import rules as registry

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
                "message": {"text": escape(f.message)},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": sarif_uri(f.path)},
                    "region": {"startLine": f.line, "startColumn": f.col}}}],
            } for f in findings],
        }],
    }
