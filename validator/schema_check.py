"""The manifest checked against its JSON Schema (draft 2020-12, validator/schema/preset.schema.json):
one place for every reader that needs a schema-valid manifest (the rule manifest-schema, the
model's targets, the catalog, the planner's CLI). Each error as (line, column, message).
"""
from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "preset.schema.json"


@lru_cache(maxsize=1)
def validator():
    import jsonschema  # imported lazily: it costs ~100 ms and lone scripts do not need it

    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    cls = jsonschema.Draft202012Validator
    # The schema itself is checked against the draft's meta-schema by the tests, not on every run.
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _allowed_keys(schema: dict) -> list[str]:
    return sorted(schema.get("properties", {}))


def _shown(value) -> str:
    """A value for a message: short (a 2000-character string is cut) and never a huge repr."""
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _describe(error) -> tuple[tuple, str, bool]:
    """(path to report at, message, whether to point at the key rather than the value)."""
    path = tuple(error.absolute_path)
    where = "/".join(str(p)[:60] for p in path) or "top level"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return path, f"{where}: missing required key '{missing}'", False
    if error.validator == "propertyNames":
        return path + (error.instance,), f"{where}: key {_shown(error.instance)} is not a valid name", True
    if error.validator == "oneOf":
        return path, f"{where}: {_shown(error.instance)} is neither 'auto' nor a positive integer", False
    expected = error.validator_value
    if error.validator in ("type", "enum", "const", "pattern", "minimum", "maximum", "exclusiveMinimum",
                           "minLength", "maxLength"):
        return path, f"{where}: {_shown(error.instance)} is not valid: expected {error.validator} {json.dumps(expected)}", False
    return path, f"{where}: {error.validator} {json.dumps(expected)[:80]} is not met", False


def schema_problems(preset):
    """(line, col, message) for each schema error of a manifest that loaded (preset.schema_problems)."""
    doc = preset.document
    if doc is None or any(p.unusable for p in doc.problems):
        return
    if doc.data is None:
        yield 1, 1, "the manifest is empty (null or only document markers); it must be a mapping of the schema's keys"
        return
    for error in sorted(validator().iter_errors(doc.data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator == "additionalProperties" and error.validator_value is False:
            allowed = _allowed_keys(error.schema)
            for key in (k for k in error.instance if k not in allowed):
                close = difflib.get_close_matches(key, allowed, n=1) if len(key) < 100 else []
                hint = f"; did you mean '{close[0]}'?" if close else f"; expected one of: {', '.join(allowed)}"
                where = "/".join(str(p)[:60] for p in error.absolute_path) or "top level"
                line, col = doc.key_position(tuple(error.absolute_path) + (key,))
                yield line, col, f"unknown key {_shown(key)} in {where}{hint}"
            continue
        path, message, at_key = _describe(error)
        line, col = doc.key_position(path) if at_key else doc.position(path)
        yield line, col, message
