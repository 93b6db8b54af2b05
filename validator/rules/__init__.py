"""The registry: every rule the validator knows, one module each.

The contract (CONTRIBUTING.md says how to add a rule): a module validator/rules/<name>.py is a
RuleModule. Its `check(target)` yields Reports, (path as displayed, line, column, message); the
registry makes each a Finding with the module's ID and SEVERITY, which are stated nowhere else. Rules
that surface what the file readers found (loader_check, followed files) yield those Findings; each
gets the severity of the rule whose id it carries.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, Union

from validator.findings import SEVERITIES, Finding

Report = tuple[str, int, int, str]  # (path as displayed, line, column, message)


class RuleModule(Protocol):
    """What every rule module defines. GOOD and BAD are examples: {file name: content or edit} that
    tests/test_rule_examples.py materialises; the BAD one must trigger the rule, the GOOD one not."""
    ID: str  # kebab-case, unique
    SEVERITY: str  # one of validator.findings.SEVERITIES
    SCOPE: str  # one of SCOPES: what a target must have for the rule to run
    DESCRIPTION: str  # one sentence, shown by `python -m validator rules`
    GOOD: dict[str, Any]
    BAD: dict[str, Any]
    # optional: PROFILE = "strict" for our presets' bar (default "default"); SILENCEABLE = False for
    # findings no suppression, --select or --ignore may hide (unreadable input, the schema, suppressions)

    def check(self, target: Any) -> Iterable[Union[Report, Finding]]: ...

# Order is the order rules run and are listed in; findings are sorted by position anyway.
RULE_MODULES = [
    "input_unreadable", "input_symlink_escape", "input_not_regular", "input_too_large",
    "input_empty", "input_binary", "input_encoding", "input_too_complex",
    "yaml_syntax", "yaml_duplicate_key", "yaml_alias", "yaml_tag", "yaml_key", "yaml_ambiguous_scalar",
    "manifest_schema", "manifest_name",
    "sbatch_shebang", "sbatch_crlf", "sbatch_unknown_option", "sbatch_abbreviated_option",
    "sbatch_ambiguous_option", "sbatch_option_unavailable", "sbatch_bad_argument",
    "sbatch_directive_after_command", "sbatch_lookalike", "sbatch_value_cut",
    "sbatch_duplicate_option", "sbatch_exclusive_options", "sbatch_bad_value", "sbatch_output_folder",
    "sbatch_exclusive_memory", "sbatch_gpus_select_plugin",
    "suppression_reason", "suppression_unknown_rule", "plan_invalid",
    "launch_gpu_count",
    "launch_node_count",
    "launch_per_task_variable",
    "launch_export_none",
    "launch_export_form",
    "launch_script_path",
    "launch_kill_on_bad_exit",
    "launch_strict_mode",
    "launch_master_port",
    "launch_rdzv_host",
    "launch_bare_wait",
    "launch_trap_deferred",
    "launch_trap_steps_only",
    "launch_step_assignment",
    "launch_srun_task_count",
    "launch_set_options",
    "launch_unset_argument",
    "launch_default_quotes",
    "launch_unset_variable",
    "launch_conda_activate",
    "launch_time_limit",
    "launch_setting_shadowed",
    "pyxis_image",
    "pyxis_container_save",
    "security_xtrace",
    "security_eval",
    "security_secret_echo",
    "security_literal_secret",
    "security_world_writable",
    "xcheck_directives",
    "xcheck_environment",
    "xcheck_image",
    "xcheck_megatron",
    "xcheck_readme",
    "xcheck_identity",
    "xcheck_attention_backend",
    "xcheck_stack",
    "policy_collnet_nvls",
    "policy_sharp",
    "policy_fabric",
    "policy_8port_list",
    "policy_net_plugin",
    "policy_ib_hca",
    "policy_net_name",
]

SCOPES = ("script", "manifest", "preset", "any")
# "default": reported on every script; "strict": only in the strict profile (presets, --strict, or a
# repository whose config asks for it): our own bar, not a defect in somebody else's job.
PROFILES = ("default", "strict")


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    description: str
    scope: str
    module: ModuleType
    profile: str = "default"
    silenceable: bool = True

    def check(self, target) -> Iterable[Union[Report, Finding]]:
        return self.module.check(target)

    def finding(self, report: Union[Report, Finding]) -> Finding:
        """A report as a Finding of this rule, with its severity. A Finding a reader made under this
        rule's id gets the same severity; one under another id (a rule that surfaces what reading a
        followed file found) keeps that id and the severity the registry gives it."""
        if isinstance(report, Finding):
            owner = BY_ID.get(report.rule, self)
            return dataclasses.replace(report, severity=owner.severity)
        display, line, col, message = report
        return Finding(display, line, col, self.severity, self.id, message)

    @property
    def good(self):
        return self.module.GOOD

    @property
    def bad(self):
        return self.module.BAD


_CONTRACT = {"ID": str, "SEVERITY": str, "SCOPE": str, "DESCRIPTION": str, "GOOD": dict, "BAD": dict}


def _load() -> list[Rule]:
    rules = []
    for name in RULE_MODULES:
        module: RuleModule = importlib.import_module(f"validator.rules.{name}")  # type: ignore[assignment]
        wrong = [f"{attr} ({kind.__name__})" for attr, kind in _CONTRACT.items()
                 if not isinstance(getattr(module, attr, None), kind)]
        wrong += [] if callable(getattr(module, "check", None)) else ["check(target)"]
        profile = getattr(module, "PROFILE", "default")
        if wrong or module.SEVERITY not in SEVERITIES or module.SCOPE not in SCOPES or profile not in PROFILES:
            raise TypeError(f"validator/rules/{name}.py breaks the rule contract (RuleModule): "
                            f"{', '.join(wrong) or 'SEVERITY, SCOPE or PROFILE out of range'}")
        silenceable = getattr(module, "SILENCEABLE", True)
        if not isinstance(silenceable, bool):
            raise TypeError(f"validator/rules/{name}.py breaks the rule contract (RuleModule): SILENCEABLE must be a bool")
        rules.append(Rule(module.ID, module.SEVERITY, module.DESCRIPTION, module.SCOPE, module, profile, silenceable))
    return rules


RULES: list[Rule] = _load()
BY_ID = {rule.id: rule for rule in RULES}


def matches(rule_id: str, patterns: list[str]) -> bool:
    """A pattern is a rule id, a glob (`sbatch-*`, `SC2*`) or a prefix ending in '-'."""
    return any(fnmatch.fnmatchcase(rule_id, p) or (p.endswith("-") and rule_id.startswith(p))
               for p in patterns)


_SHELLCHECK_CODES = [f"SC{n}" for n in range(1000, 4000)]


def known(pattern: str) -> bool:
    """Whether a --select/--ignore pattern matches at least one rule id or shellcheck code."""
    return any(matches(rule.id, [pattern]) for rule in RULES) or any(
        matches(code, [pattern]) for code in _SHELLCHECK_CODES)
