"""Discovering targets, running every rule and shellcheck, and filtering the findings."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from validator import sbatch
from validator.config import ConfigError, load_config
from validator.findings import Finding
from validator.model import MANIFEST_NAME, SCRIPT_NAME, Target, load_preset, load_script
from validator.shellcheck import keep_in_default_profile, start_shellcheck
from validator.suppress import parse_suppressions


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


@dataclass
class Options:
    # None: a preset's manifest slurm.min_version, else the repository config's slurm-version,
    # else (a script nobody here wrote) the newest release the option table knows
    release: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    shellcheck: bool = True
    strict: bool = False  # the strict profile for every input, not only presets


def find_root(start: Path) -> Path:
    """The repository the inputs belong to: the nearest folder with presets/ or .git, else cwd."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / "presets").is_dir() or (folder / ".git").exists():
            return folder
    return Path.cwd().resolve()


def discover(paths: list[str]) -> list[tuple[str, Path]]:
    """('preset', folder), ('script', file) or ('shared', file: a preset repository's scripts/)."""
    found: list[tuple[str, Path]] = []
    if not paths:
        presets = Path("presets")
        if not presets.is_dir():
            raise UsageError("no path given and no presets/ folder here")
        folders = sorted(p for p in presets.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not folders:
            raise UsageError("presets/ holds no preset folders")
        found = [("preset", p) for p in folders]
        # The shared in-job scripts are part of every preset: lint them too.
        found += [("shared", p) for p in shell_scripts_in(Path("scripts"))]
        return found
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            if os.path.lexists(path / MANIFEST_NAME) or os.path.lexists(path / SCRIPT_NAME):
                found.append(("preset", path))
            else:
                subs = sorted(p for p in path.iterdir() if p.is_dir() and (p / MANIFEST_NAME).exists())
                if not subs:
                    raise UsageError(f"{raw}: folder holds no {MANIFEST_NAME} and no preset folders")
                found.extend(("preset", p) for p in subs)
        elif path.name == MANIFEST_NAME:
            found.append(("preset", path.parent))
        elif os.path.lexists(path):
            found.append(("script", path))
        else:
            raise UsageError(f"{raw}: no such file or folder")
    return found


def shell_scripts_in(folder: Path) -> list[Path]:
    """Bash scripts (by shebang or .sh suffix) directly inside a folder."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if path.suffix == ".sh":
            found.append(path)
            continue
        try:
            with open(path, "rb") as handle:
                head = handle.readline(100)
        except OSError:
            continue
        if head.startswith(b"#!") and b"bash" in head:
            found.append(path)
    return found


def _applies(rule, target: Target) -> bool:
    if rule.scope == "any":
        return True
    if rule.scope == "script":
        return target.script is not None
    if rule.scope in ("manifest", "preset"):
        return target.preset is not None
    return False


def validate(paths: list[str], options: Options) -> list[Finding]:
    targets: list[Target] = []
    for kind, path in discover(paths):
        root = find_root(path)
        try:
            config = load_config(path if path.is_dir() else path.parent, root)
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        if kind == "preset":
            preset, problems = load_preset(path, root, options.release or config.slurm_version)
            release = preset.script.release if preset.script else (options.release or sbatch.releases()[0])
            target = Target(script=preset.script, preset=preset, repo_root=root, release=release)
        else:
            strict = kind == "shared" or options.strict or config.strict
            release = options.release or config.slurm_version or sbatch.releases()[-1]
            script, problems = load_script(path, root, release, strict, config.spank, config.spank_options)
            target = Target(script=script, repo_root=root, release=release, strict=strict)
        if target.preset and target.preset.document:
            problems = problems + target.preset.document.problems
        for source in _texts(target):
            problems = problems + parse_suppressions(source.text, source.display)[2]
        target.load_problems = list(problems)
        targets.append(target)

    strict = [t.script.display for t in targets if t.script is not None and t.strict]
    default = [t.script.display for t in targets if t.script is not None and not t.strict]
    # shellcheck starts first and runs in its own processes while Python loads and runs the rules;
    # the strict profile adds shellcheck's optional checks.
    pending = [start_shellcheck(group, optional=group is strict)
               for group in (strict, default) if group and options.shellcheck]
    findings: list[Finding] = []
    for target in targets:
        findings.extend(_run_rules(target))
    default_paths = set(default)
    for collect in pending:
        findings.extend(f for f in collect() if f.path not in default_paths or keep_in_default_profile(f))

    return _filter(findings, targets, options)


def _run_rules(target: Target) -> list[Finding]:
    from validator import rules as registry  # imported after shellcheck has started

    out = []
    for rule in registry.RULES:
        if not _applies(rule, target) or (rule.profile == "strict" and not target.strict):
            continue
        for item in rule.check(target):
            if isinstance(item, Finding):
                out.append(item)
            else:
                display, line, col, message = item
                out.append(Finding(display, line, col, rule.severity, rule.id, message))
    return out


def _filter(findings: list[Finding], targets: list[Target], options: Options) -> list[Finding]:
    from validator import rules as registry

    suppressions = {}
    for target in targets:
        for source in _texts(target):
            by_line, whole, _ = parse_suppressions(source.text, source.display)
            suppressions[source.display] = (by_line, whole)
    kept = []
    for finding in sorted(set(findings)):
        if options.select and not registry.matches(finding.rule, list(options.select)):
            continue
        if options.ignore and registry.matches(finding.rule, list(options.ignore)):
            continue
        by_line, whole = suppressions.get(finding.path, ({}, set()))
        if finding.rule != "suppression-reason" and (
                registry.matches(finding.rule, list(whole))
                or registry.matches(finding.rule, list(by_line.get(finding.line, ())))):
            continue
        kept.append(finding)
    return kept


def _texts(target: Target):
    """The readable sources of a target that may carry inline suppressions."""
    if target.script is not None:
        yield target.script.source
    if target.preset is not None and target.preset.manifest_source.usable:
        yield target.preset.manifest_source
