"""Strict YAML loading for manifests.

PyYAML implements YAML 1.1, whose implicit typing silently turns `4:00:00` into 14400, `no` into
False, `0755` into 493 and `3.10` into 3.1, keeps the last of two duplicate keys, and expands
aliases without bound. Here we compose the node tree (which keeps line and column) and build the
values ourselves with a small YAML 1.2-core subset: anything a YAML 1.1 reader would convert in a
surprising way is reported and kept as the string that was written.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from validator.findings import Finding

Path_ = tuple  # a path into the document: keys and list indexes

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?([eE][-+]?[0-9]+)?\Z")
_TRAILING_ZERO_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*0\Z")
_YAML11_BOOL = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON",
                "off", "Off", "OFF", "True", "TRUE", "False", "FALSE"}
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?\Z")
_OTHER_BASE = re.compile(r"[-+]?(0[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+|[0-9][0-9_]*_[0-9_]*)\Z")
_SPECIAL_FLOAT = re.compile(r"[-+]?\.(inf|Inf|INF)\Z|\.(nan|NaN|NAN)\Z")
_NULLS = {"null", "Null", "NULL", "~", ""}
MAX_DEPTH = 64  # mappings and lists nested deeper than this are refused before anything is built
MAX_INT_DIGITS = 100
# The pure-Python parser names the offending character, but its scanner is quadratic in the flow
# nesting depth ('[' x 2000 takes 5 s): it re-parses only small files with little flow nesting.
FALLBACK_MAX_BYTES = 64 * 1024
FALLBACK_MAX_FLOW = 256
# libyaml's parser when PyYAML was built with it (about 10x faster); same events, same marks.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Document:
    data: object = None
    value_marks: dict = field(default_factory=dict)  # path -> (line, col) of the value
    key_marks: dict = field(default_factory=dict)  # path -> (line, col) of the key naming it
    problems: list = field(default_factory=list)

    def position(self, path: Path_) -> tuple[int, int]:
        """Best position for a path: the value, else the nearest ancestor."""
        path = tuple(path)
        while path not in self.value_marks and path:
            path = path[:-1]
        return self.value_marks.get(path, (1, 1))

    def key_position(self, path: Path_) -> tuple[int, int]:
        path = tuple(path)
        return self.key_marks.get(path) or self.position(path)


def _plain(node) -> bool:
    """A plain (unquoted) scalar: PyYAML says style None, its libyaml binding says ''."""
    return not node.style


def _mark(node_or_event) -> tuple[int, int]:
    m = node_or_event.start_mark
    return m.line + 1, m.column + 1


class _Builder:
    def __init__(self, display: str, doc: Document):
        self.display = display
        self.doc = doc

    def problem(self, rule: str, where: tuple[int, int], message: str, unusable: bool = False):
        self.doc.problems.append(
            Finding(self.display, where[0], where[1], "error", rule, message, unusable=unusable))

    def build(self, node, path: Path_):
        self.doc.value_marks[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self.scalar(node)

    def mapping(self, node, path: Path_) -> dict:
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem("yaml-key", _mark(key_node), "mapping keys must be plain strings")
                continue
            if key_node.tag == "tag:yaml.org,2002:merge" or key_node.value == "<<" and _plain(key_node):
                self.problem("yaml-alias", _mark(key_node), "merge keys ('<<') are not allowed in a manifest")
                continue
            key = key_node.value
            if _plain(key_node):
                self.check_plain(key_node)
            if key in out:
                first = self.doc.key_marks[path + (key,)]
                self.problem("yaml-duplicate-key", _mark(key_node),
                             f"duplicate key '{key}' (first defined at line {first[0]}); "
                             "YAML readers silently keep only the last one")
                continue
            self.doc.key_marks[path + (key,)] = _mark(key_node)
            out[key] = self.build(value_node, path + (key,))
        return out

    def check_plain(self, node) -> bool:
        """Report plain scalars that a YAML 1.1 reader converts; return True when reported."""
        text = node.value
        reason = None
        if text in _YAML11_BOOL:
            reason = "is read as a boolean by YAML 1.1 readers"
        elif _SEXAGESIMAL.match(text):
            reason = "is read as a base-60 number by YAML 1.1 readers (4:00:00 becomes 14400)"
        elif _OTHER_BASE.match(text):
            reason = "is read as an octal, hex, binary or underscored number by YAML readers"
        elif _TRAILING_ZERO_FLOAT.match(text):
            reason = "is read as a float and loses its trailing zero (3.10 becomes 3.1)"
        elif _SPECIAL_FLOAT.match(text):
            reason = "is read as an infinite or NaN float"
        if reason:
            self.problem("yaml-ambiguous-scalar", _mark(node),
                         f"plain value '{text}' {reason}; quote it")
            return True
        return False

    def scalar(self, node):
        text = node.value
        if not _plain(node):  # quoted or block scalar: always a string
            return text
        if self.check_plain(node):
            return text
        if text in _NULLS:
            return None
        if text in ("true", "false"):
            return text == "true"
        if _INT.match(text):
            if len(text) > MAX_INT_DIGITS:  # int() refuses over 4300 digits; no field takes such a number
                self.problem("yaml-ambiguous-scalar", _mark(node),
                             f"plain integer of {len(text)} digits is beyond any field's range "
                             "(and beyond what YAML readers convert); kept as text")
                return text
            return int(text)
        if _FLOAT.match(text) and any(c in text for c in ".eE"):
            return float(text)
        return text


def load_yaml(text: str, display: str, loader=None) -> Document:
    loader = loader or _LOADER
    doc = Document()
    builder = _Builder(display, doc)
    try:
        # First pass over the event stream: refuse anchors, aliases, explicit tags and deep nesting
        # before any node tree is built, so an alias bomb or a nesting bomb costs nothing. The
        # events are streamed: the walk is iterative and stops at the first refusal.
        documents = depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    builder.problem("input-too-complex", _mark(event),
                                    f"mappings and lists nested more than {MAX_DEPTH} levels deep; "
                                    "a manifest needs a handful", unusable=True)
                    return doc
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    builder.problem("yaml-syntax", _mark(event),
                                    "more than one YAML document; a manifest is a single document",
                                    unusable=True)
                    return doc
            if isinstance(event, yaml.AliasEvent):
                builder.problem("yaml-alias", _mark(event),
                                f"alias '*{event.anchor}': anchors and aliases are not allowed in a manifest",
                                unusable=True)
                return doc
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                builder.problem("yaml-alias", _mark(event),
                                f"anchor '&{anchor}': anchors and aliases are not allowed in a manifest",
                                unusable=True)
                return doc
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!" and isinstance(
                    event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                implicit = getattr(event, "implicit", (True, True))
                if isinstance(event, yaml.ScalarEvent) and (implicit[0] or implicit[1]):
                    continue
                if not isinstance(event, yaml.ScalarEvent) and implicit:
                    continue
                builder.problem("yaml-tag", _mark(event), f"explicit tag '{tag}' is not allowed in a manifest",
                                unusable=True)
                return doc
        node = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        if loader is not yaml.SafeLoader and _fallback_is_cheap(text):
            # libyaml's messages are terse ("found character that cannot start any token");
            # the pure-Python parser names the character. Errors are rare: parse once more.
            return load_yaml(text, display, yaml.SafeLoader)
        mark = exc.problem_mark or exc.context_mark
        where = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        builder.problem("yaml-syntax", where, f"YAML syntax error: {what}", unusable=True)
        return doc
    except yaml.YAMLError as exc:
        builder.problem("yaml-syntax", (1, 1), f"YAML error: {str(exc)[:300]}", unusable=True)
        return doc
    if node is None:
        return doc  # an empty document (`~`, only `---`): the schema rule says so
    doc.data = builder.build(node, ())
    return doc


def _fallback_is_cheap(text: str) -> bool:
    return len(text) <= FALLBACK_MAX_BYTES and text.count("[") + text.count("{") <= FALLBACK_MAX_FLOW
