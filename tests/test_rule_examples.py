"""Every rule carries a good and a bad example; the bad one must trigger it, the good one must not."""
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from validator.engine import Options, validate
from validator.rules import RULES

BASE = FIXTURES / "ok" / "example"


def materialise(example: dict, folder: Path) -> list[str]:
    """Write an example; return the paths to validate (relative to folder)."""
    is_preset = any(name in ("preset.yaml", "train.sbatch", "README.md") for name in example)
    if is_preset:
        preset = folder / "example"
        shutil.copytree(BASE, preset)
        for name, content in example.items():
            target = preset / name
            if content is None:
                continue
            kind = content[0] if isinstance(content, tuple) else None
            if kind == "replace":
                text = target.read_text()
                assert content[1] in text, f"example edit target missing: {content[1]!r}"
                target.write_text(text.replace(content[1], content[2], 1))
            elif kind == "missing":
                target.unlink()
            elif kind == "dir":
                target.unlink()
                target.mkdir()
            elif kind == "symlink":
                target.unlink()
                os.symlink(content[1], target)
            else:
                _write(target, content)
        return ["example"]
    paths = []
    for name, content in example.items():
        target = folder / name
        if isinstance(content, tuple) and content[0] == "symlink":
            os.symlink(content[1], target)
        else:
            _write(target, content)
        paths.append(name)
    return paths


def _write(target: Path, content):
    target.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_examples(rule, tmp_path, monkeypatch):
    for label, example, want in (("good", rule.good, False), ("bad", rule.bad, True)):
        folder = tmp_path / label
        folder.mkdir()
        (folder / ".git").mkdir()  # the example folder is its own repository root
        monkeypatch.chdir(folder)
        paths = materialise(example, folder)
        ids = {f.rule for f in validate(paths, Options(shellcheck=False, strict=True))}
        assert (rule.id in ids) is want, f"{label} example of {rule.id}: found {sorted(ids)}"


def test_every_rule_is_documented():
    for rule in RULES:
        assert rule.description and rule.severity in ("error", "warning", "info")
        assert rule.scope in ("script", "manifest", "preset", "any")
    assert len({r.id for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_states_its_premise_and_releases(rule):
    """Issue 28: each rule module says what it assumes about Slurm (or bash, YAML, pyxis) and for which
    releases that holds, with the source it was checked against."""
    doc = rule.module.__doc__ or ""
    assert "Premise" in doc and "Holds for:" in doc, f"validator/rules/{rule.module.__name__.rsplit('.', 1)[-1]}.py"


@pytest.mark.parametrize("rule", [r for r in RULES if r.profile == "default" and r.scope == "script"],
                         ids=lambda r: r.id)
def test_default_profile_bad_examples_fire(rule, tmp_path, monkeypatch):
    """A script nobody here wrote gets the default profile: its rules' BAD examples fire there too."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    paths = materialise(rule.bad, tmp_path)
    ids = {f.rule for f in validate(paths, Options(shellcheck=False))}
    assert rule.id in ids, f"bad example of {rule.id} in the default profile: found {sorted(ids)}"


def test_a_module_that_breaks_the_contract_is_named(monkeypatch):
    import sys
    import types

    from validator import rules as registry

    broken = types.ModuleType("validator.rules.broken_example")
    broken.ID, broken.SEVERITY, broken.SCOPE, broken.DESCRIPTION = "broken-example", "fatal", "script", "x"
    broken.GOOD, broken.BAD = {}, {}
    monkeypatch.setitem(sys.modules, "validator.rules.broken_example", broken)
    monkeypatch.setattr(registry, "RULE_MODULES", ["broken_example"])
    with pytest.raises(TypeError, match=r"broken_example.py breaks the rule contract \(RuleModule\): check\(target\)"):
        registry._load()
    broken.check = lambda target: iter(())
    with pytest.raises(TypeError, match="SEVERITY, SCOPE or PROFILE out of range"):
        registry._load()


def test_every_report_carries_its_rule_id_and_severity():
    from validator.findings import Finding
    from validator.rules import BY_ID

    rule = BY_ID["sbatch-abbreviated-option"]
    assert rule.finding(("x.sbatch", 3, 9, "m")) == Finding("x.sbatch", 3, 9, "warning", rule.id, "m")
    stamped = rule.finding(Finding("x.sbatch", 3, 9, "error", rule.id, "m", unusable=True))
    assert (stamped.severity, stamped.rule, stamped.unusable) == ("warning", rule.id, True)
    other = rule.finding(Finding("x.sbatch", 3, 9, "warning", "input-symlink-escape", "m", unusable=True))
    assert (other.severity, other.rule) == (BY_ID["input-symlink-escape"].severity, "input-symlink-escape")
