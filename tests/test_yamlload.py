"""The strict loader against PyYAML's YAML 1.1 surprises."""
import yaml

from validator.yamlload import load_yaml


def rules(doc):
    return [p.rule for p in doc.problems]


def test_values_keep_their_written_form():
    doc = load_yaml('a: "4:00:00"\nb: 1\nc: 0.5\nd: true\ne: ~\nf: text\n', "x")
    assert doc.data == {"a": "4:00:00", "b": 1, "c": 0.5, "d": True, "e": None, "f": "text"}
    assert not doc.problems


def test_yaml11_conversions_are_reported_and_kept_as_strings():
    text = "t: 4:00:00\nb: no\no: 0755\nv: 3.10\nw: on\n"
    assert yaml.safe_load(text) == {"t": 14400, "b": False, "o": 493, "v": 3.1, "w": True}
    doc = load_yaml(text, "x")
    assert doc.data == {"t": "4:00:00", "b": "no", "o": "0755", "v": "3.10", "w": "on"}
    assert rules(doc) == ["yaml-ambiguous-scalar"] * 5
    assert [(p.line, p.col) for p in doc.problems] == [(1, 4), (2, 4), (3, 4), (4, 4), (5, 4)]


def test_duplicate_keys_point_at_the_second():
    doc = load_yaml("a: 1\nb:\n  c: 1\n  c: 2\n", "x")
    assert rules(doc) == ["yaml-duplicate-key"]
    assert (doc.problems[0].line, doc.problems[0].col) == (4, 3)


def test_alias_bomb_is_refused_before_expansion():
    bomb = "a: &a [" + ",".join(["x"] * 9) + "]\n"
    for name, prev in zip("bcdefghi", "abcdefgh"):
        bomb += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    doc = load_yaml(bomb, "x")
    assert rules(doc) == ["yaml-alias"] and doc.data is None


def test_positions_of_nested_values():
    doc = load_yaml("top:\n  list:\n    - one\n    - two\n", "x")
    assert doc.position(("top", "list", 1)) == (4, 7)
    assert doc.key_position(("top", "list")) == (2, 3)


def test_syntax_error_is_unusable_with_position():
    doc = load_yaml("a: [1\n", "x")
    assert rules(doc) == ["yaml-syntax"] and doc.problems[0].unusable


def test_shipped_schema_is_a_valid_draft_2020_12_schema():
    import json

    import jsonschema

    from validator.schema_check import SCHEMA_PATH
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))
