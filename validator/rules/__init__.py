"""The registry: every rule the validator knows, one module each."""
from __future__ import annotations

import fnmatch
import importlib
from dataclasses import dataclass
from types import ModuleType

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
    "suppression_reason", "suppression_unknown_rule", "plan_invalid",
    "launch_gpu_count",
    "launch_node_count",
    "launch_per_task_variable",
    "launch_export_none",
    "launch_script_path",
    "launch_kill_on_bad_exit",
    "launch_strict_mode",
    "launch_master_port",
    "launch_rdzv_host",
    "launch_bare_wait",
    "launch_unset_argument",
    "launch_default_quotes",
    "launch_unset_variable",
    "launch_time_limit",
    "pyxis_image",
    "pyxis_container_save",
    "security_xtrace",
    "security_eval",
    "security_secret_echo",
    "security_world_writable",
    "xcheck_directives",
    "xcheck_environment",
    "xcheck_image",
    "xcheck_megatron",
    "xcheck_readme",
    "xcheck_identity",
    "policy_collnet_nvls",
    "policy_sharp",
    "policy_fabric",
    "policy_8port_list",
    "policy_net_plugin",
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

    def check(self, target):
        return self.module.check(target)

    @property
    def good(self):
        return self.module.GOOD

    @property
    def bad(self):
        return self.module.BAD


def _load() -> list[Rule]:
    rules = []
    for name in RULE_MODULES:
        module = importlib.import_module(f"validator.rules.{name}")
        rules.append(Rule(module.ID, module.SEVERITY, module.DESCRIPTION, module.SCOPE, module,
                          getattr(module, "PROFILE", "default")))
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
