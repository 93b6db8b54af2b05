"""Writes tests/hostile/cases/<case>/ from the table below and records what the validator does.

Each case is a small repository: `files/` (the inputs, laid out from the repository root) and
`case.json` (arguments, file-system set-up that git cannot hold, the expected exit code and the
expected first line of output). tests/test_hostile.py replays every case on every output format.
The classes are issue 14's: 1 rules on what the schema rejected, 2 empty and silenced, 3 reads
outside the repository, 4 unbounded work, 5 odd values and files, 6 forged output, 7 lines counted
differently. Run it after adding a case, then READ the summary it prints before committing.

    PYTHONPATH=tests .venv/bin/python tests/hostile/make_cases.py [NAME ...]
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES_DIR = HERE / "cases"
BASE = ROOT / "tests" / "fixtures" / "ok" / "example"

SH = "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"


def preset(manifest=None, script=None, readme=None, args=("presets/example",), **extra):
    """A copy of ok/example as presets/example with edits: a list of (old, new) or a full text."""
    files = {}
    for name, edit in (("preset.yaml", manifest), ("train.sbatch", script), ("README.md", readme)):
        text = (BASE / name).read_text()
        if isinstance(edit, list):
            for old, new in edit:
                assert old in text, (name, old)
                text = text.replace(old, new, 1)
        elif edit is not None:
            text = edit
        files[f"presets/example/{name}"] = text
    return {"files": files, "args": list(args), **extra}


def lone(text, name="job.sbatch", args=None, **extra):
    if any(ord(c) < 32 for c in name):  # a name git should not hold: made by the test
        return {"files": {"keep": ""}, "args": list(args or [name]), "setup": [["write", name, text]], **extra}
    return {"files": {name: text}, "args": list(args or [name]), **extra}


def manifest_value(old, new, **extra):
    return preset(manifest=[(old, new)], **extra)


DEEP_QUOTED = "echo " + '"$(echo ' * 18 + "x" + ')"' * 18 + "\n"
CASES = {
    # --- 1. rules and the planner run only on what the schema accepts ----------------------------
    "c1-micro-batch-string": manifest_value("  micro_batch_size: 1\n", "  micro_batch_size: eight\n"),
    "c1-gpus-per-node-1e12": manifest_value("    per_node: 8\n", "    per_node: 1000000000000\n"),
    "c1-nodes-min-negative": manifest_value("  min: 1\n", "  min: -100000000\n"),
    "c1-nodes-min-over-max": manifest_value("  min: 1\n", "  min: 100\n"),
    "c1-memory-1e400": manifest_value("    memory_gib: 24\n", "    memory_gib: 1e400\n"),
    "c1-layers-400-digits": manifest_value("  num_layers: 12\n", "  num_layers: " + "9" * 400 + "\n"),
    "c1-topology-scalar": preset(manifest=[("topology:\n", "topology: flat\nx_topology:\n")]),
    "c1-topology-list": preset(manifest=[("topology:\n", "topology: [a, b]\nx_topology:\n")]),
    "c1-slurm-scalar": preset(manifest=[("slurm:\n", "slurm: x\nx_slurm:\n")]),
    "c1-environment-list": preset(manifest=[("environment:\n", "environment: [NCCL_IB_DISABLE]\nx_environment:\n")]),
    "c1-model-null": preset(manifest=[("model:\n", "model: ~\nx_model:\n")]),
    "c1-images-list": manifest_value('    x86_64: "ghcr.io#', '    - "ghcr.io#'),
    "c1-tensor-string": manifest_value("  tensor: auto\n", "  tensor: all\n"),
    "c1-tensor-huge": manifest_value("  tensor: auto\n", "  tensor: 1000000000000\n"),
    "c1-nodes-list": preset(manifest=[("nodes:\n  min: 1\n  max: 64\n", "nodes: [1, 64]\n")]),
    "c1-expectations-scalar": preset(manifest=[("expectations:\n", "expectations: 5\nx_expectations:\n")]),
    "c1-megatron-number": manifest_value("  megatron: core_v0.13.0\n", "  megatron: 1.5\n"),
    "c1-directives-list": preset(manifest=[("  directives:\n", "  directives: [time]\n  x_directives:\n")]),
    "c1-env-entry-string": manifest_value("  NCCL_IB_DISABLE:\n    value: \"1\"\n",
                                          "  NCCL_IB_DISABLE: \"1\"\n  X_NCCL_IB_DISABLE:\n    value: \"1\"\n"),
    "c1-manifest-scalar": preset(manifest="just a string\n"),
    "c1-manifest-number": preset(manifest="42\n"),
    "c1-spank-mapping": manifest_value("  spank: [pyxis]\n", "  spank: {pyxis: 1}\n"),
    "c1-gpu-model-list": manifest_value("    model: any NVIDIA GPU\n", "    model: [a, b]\n"),
    "c1-name-number": manifest_value("name: example\n", "name: 7\n"),
    "c1-arch-unknown": manifest_value("  arch: x86_64\n", "  arch: riscv\n"),
    "c1-plan-gpus-1e12": preset(args=("plan", "presets/example", "--nodes", "2", "--gpus-per-node", "1000000000000")),
    "c1-plan-gpus-zero": preset(args=("plan", "presets/example", "--nodes", "2", "--gpus-per-node", "0")),
    "c1-plan-nodes-400-digits": preset(args=("plan", "presets/example", "--nodes", "9" * 400)),
    "c1-plan-nodes-5000-digits": preset(args=("plan", "presets/example", "--nodes", "9" * 5000)),
    "c1-plan-nodes-negative-range": preset(args=("plan", "presets/example", "--nodes", "-100000000-5")),
    "c1-plan-nodes-huge-range": preset(args=("plan", "presets/example", "--nodes", "1-1000000")),
    "c1-plan-nodes-superscript": preset(args=("plan", "presets/example", "--nodes", "²")),
    "c1-plan-schema-invalid": preset(manifest=[("  micro_batch_size: 1\n", "  micro_batch_size: eight\n")],
                                     args=("plan", "presets/example", "--nodes", "2")),
    "c1-plan-min-over-max": preset(manifest=[("  min: 1\n", "  min: 100\n")],
                                   args=("plan", "presets/example", "--nodes", "2")),
    # --- 2. empty manifests are findings; unusable input is never silenced -----------------------
    "c2-manifest-tilde": preset(manifest="~\n"),
    "c2-manifest-null": preset(manifest="null\n"),
    "c2-manifest-doc-marker": preset(manifest="---\n"),
    "c2-manifest-markers": preset(manifest="---\n...\n"),
    "c2-manifest-comment-only": preset(manifest="# nothing here\n"),
    "c2-disable-file-star-manifest": preset(manifest=[("schema_version: 1\n", "# validator: disable-file=* -- x\nschema_version: 1\nsumary: typo\n")]),
    "c2-disable-file-star-script": preset(script=[("set -euo pipefail\n", "# validator: disable-file=* -- x\nset -euo pipefail\n")]),
    "c2-disable-yaml-syntax": preset(manifest=[("schema_version: 1\n", "# validator: disable-file=yaml-syntax -- x\nschema_version: [1\n")]),
    "c2-disable-schema": preset(manifest=[("schema_version: 1\n", "# validator: disable-file=manifest-schema -- x\nschema_version: 2\n")]),
    "c2-disable-glob-family": lone(SH + "# validator: disable-file=sbatch-* -- x\n#SBATCH --tme=1\necho ok\n"),
    "c2-disable-question-mark": lone(SH + "# validator: disable=SC208? -- x\necho $X\n"),
    "c2-disable-unknown-id": lone(SH + "# validator: disable=sbatch-unknwn-option -- typo\necho ok\n"),
    "c2-disable-empty-list": lone(SH + "# validator: disable= -- nothing\necho ok\n"),
    "c2-disable-input-binary": lone(SH + "# validator: disable-file=input-binary -- x\necho \x00\n"),
    "c2-ignore-input-star": lone("#!/bin/bash\n\x00\x01", args=("--ignore", "input-*", "job.sbatch")),
    "c2-select-only-sc-binary": lone("#!/bin/bash\n\x00\x01", args=("--select", "SC2086", "job.sbatch")),
    "c2-ignore-yaml-syntax": preset(manifest=[("  min: 1\n", "  min: [1\n")], args=("--ignore", "yaml-*", "presets/example")),
    "c2-select-typo": lone(SH + "echo $X\n", args=("--select", "sbatch-unknwn-*", "job.sbatch")),
    "c2-ignore-typo": lone(SH + "echo ok\n", args=("--ignore", "SC99999", "job.sbatch")),
    "c2-select-empty-pattern": lone(SH + "echo ok\n", args=("--select", ",", "job.sbatch")),
    "c2-select-valid-glob": lone(SH + "#SBATCH --tme=1\necho ok\n", args=("--select", "sbatch-*", "job.sbatch")),
    "c2-ignore-manifest-schema": preset(manifest=[("schema_version: 1\n", "schema_version: 2\n")],
                                        args=("--ignore", "manifest-schema", "presets/example")),
    "c2-disable-suppression-check": lone(SH + "# validator: disable-file=suppression-unknown-rule,nope -- x\necho ok\n"),
    # --- 3. every file read through the one reader: inside the repository ----------------------
    "c3-preset-folder-link-outside": {"files": {"keep": ""}, "args": ["presets/example"],
                                      "setup": [["outside-preset"], ["symlink", "presets/example", "{outside}/example"]]},
    "c3-megatron-node-link-outside": preset(setup=[["outside-file", "megatron-node", "#!/bin/bash\nargs=(--bogus-flag)\n"],
                                                   ["symlink", "scripts/megatron-node", "{outside}/megatron-node"]],
                                            script=[("train.py'", "train.py'\nsrun scripts/megatron-node")]),
    "c3-megatron-node-link-inside": preset(setup=[["write", "lib/megatron-node", "#!/bin/bash\nargs=(--num-layers 2)\n"],
                                                  ["symlink", "scripts/megatron-node", "../lib/megatron-node"]],
                                           script=[("train.py'", "train.py'\nsrun scripts/megatron-node")]),
    "c3-megatron-path-traversal": manifest_value("  megatron: core_v0.13.0\n", "  megatron: ../../../../etc/hostname\n"),
    "c3-megatron-any-txt": manifest_value("  megatron: core_v0.13.0\n", "  megatron: README\n"),
    "c3-manifest-link-outside": preset(setup=[["outside-file", "preset.yaml", "schema_version: 1\n"],
                                              ["symlink", "presets/example/preset.yaml", "{outside}/preset.yaml"]]),
    "c3-script-link-dev-zero": preset(setup=[["symlink", "presets/example/train.sbatch", "/dev/zero"]]),
    "c3-readme-link-outside": preset(setup=[["outside-file", "README.md", "# x\n"],
                                            ["symlink", "presets/example/README.md", "{outside}/README.md"]]),
    "c3-script-link-inside": {"files": {"real/job.sbatch": SH + "echo ok\n"}, "args": ["job.sbatch"],
                              "setup": [["symlink", "job.sbatch", "real/job.sbatch"]]},
    "c3-lone-link-outside": {"files": {"keep": ""}, "args": ["job.sbatch"],
                             "setup": [["outside-file", "job.sbatch", SH], ["symlink", "job.sbatch", "{outside}/job.sbatch"]]},
    "c3-dangling-link": {"files": {"keep": ""}, "args": ["job.sbatch"], "setup": [["symlink", "job.sbatch", "nowhere.sbatch"]]},
    "c3-link-loop": {"files": {"keep": ""}, "args": ["job.sbatch"], "setup": [["symlink", "job.sbatch", "job.sbatch"]]},
    "c3-config-link-outside": {"files": {"job.sbatch": SH + "echo ok\n"}, "args": ["job.sbatch"],
                               "setup": [["outside-file", "v.toml", "strict = true\n"], ["symlink", ".validator.toml", "{outside}/v.toml"]]},
    "c3-config-fifo": {"files": {"job.sbatch": SH + "echo ok\n"}, "args": ["job.sbatch"], "setup": [["fifo", ".validator.toml"]]},
    "c3-script-fifo": {"files": {"keep": ""}, "args": ["job.sbatch"], "setup": [["fifo", "job.sbatch"]]},
    "c3-scripts-folder-link-outside": preset(args=(), setup=[["outside-file", "evil.sh", "#!/bin/bash\necho $X\n"],
                                                             ["symlink", "scripts/evil.sh", "{outside}/evil.sh"]]),
    "c3-presets-loop": preset(args=(), setup=[["symlink", "presets/loop", "loop"]]),
    # --- 4. bounded work ---------------------------------------------------------------------
    "c4-shellcheck-exponential": lone(SH + DEEP_QUOTED, shellcheck=True, one_format=True, cpu_base_s=0.5),
    "c4-yaml-flow-nesting": manifest_value("schema_version: 1\n", "schema_version: 1\nx: " + "[" * 3000 + "]" * 3000 + "\n"),
    "c4-yaml-flow-unclosed": manifest_value("schema_version: 1\n", "schema_version: 1\nx: " + "[" * 20000 + "\n"),
    "c4-yaml-map-nesting": manifest_value("schema_version: 1\n", "schema_version: 1\nx: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n"),
    "c4-yaml-block-nesting": manifest_value("schema_version: 1\n", "schema_version: 1\n" + "".join("  " * i + "k:\n" for i in range(300)) + "  " * 300 + "v: 1\n"),
    "c4-yaml-sequence-nesting": manifest_value("schema_version: 1\n", "schema_version: 1\nx:\n" + "- " * 5000 + "x\n"),
    "c4-bash-subshell-nesting": lone(SH + "echo " + "$(" * 5000 + "x" + ")" * 5000 + "\n"),
    "c4-bash-paren-nesting": lone(SH + "(" * 20000 + "true" + ")" * 20000 + "\n"),
    "c4-bash-brace-nesting": lone(SH + "{ " * 5000 + "true; " + "}; " * 5000 + "\n"),
    "c4-wrapper-chain": lone(SH + "time " * 5000 + "srun true\n", one_format=True),
    "c4-bash-c-chain": lone(SH + "bash -c 'bash -c \"bash -c true\"'\n" * 2000, one_format=True),
    "c4-many-secret-echoes": lone(SH + "TOKEN=x\n" + 'echo "$TOKEN $TOKEN $TOKEN"\n' * 8000, one_format=True),
    "c4-many-megatron-node-mentions": preset(script=[("train.py'", "train.py'\n" + "srun scripts/megatron-node\n" * 3000)],
                                             setup=[["write", "scripts/megatron-node", "#!/bin/bash\nargs=(--num-layers 2)\n"]],
                                             one_format=True),
    "c4-big-readme": preset(readme=(BASE / "README.md").read_text() + "word " * 50000,
                            script=[("export MEGATRON_NUM_LAYERS", "".join(f"export V{i}=1\n" for i in range(3000)) + "export MEGATRON_NUM_LAYERS")]),
    "c4-too-large": lone("#!/bin/bash\n" + "# padding\n" * 30000),
    "c4-many-directives": lone("#!/bin/bash\n" + "#SBATCH --time=1 --ntasks-per=2 -N 1 --gpus-per\n" * 3000 + "set -euo pipefail\n"),
    "c4-long-line": lone(SH + "echo " + "x" * 250000 + "\n"),
    # --- 5. odd values and files -------------------------------------------------------------
    "c5-superscript-port": lone(SH + "export MASTER_PORT=²⁹⁵⁰⁰\nsrun --kill-on-bad-exit=1 torchrun --nnodes=\"$SLURM_NNODES\" x.py\n"),
    "c5-superscript-nproc": lone(SH + "srun --kill-on-bad-exit=1 torchrun --nproc-per-node=⁸ --nnodes=¹ x.py\n"),
    "c5-arabic-digits-port": lone(SH + "export MASTER_PORT=٢٩٥٠٠\nsrun --kill-on-bad-exit=1 torchrun --nnodes=\"$SLURM_NNODES\" x.py\n"),
    "c5-port-5000-digits": lone(SH + "export MASTER_PORT=" + "9" * 5000 + "\nsrun --kill-on-bad-exit=1 torchrun --nnodes=\"$SLURM_NNODES\" x.py\n"),
    "c5-endpoint-port-5000-digits": lone(SH + "srun --kill-on-bad-exit=1 torchrun --nnodes=\"$SLURM_NNODES\" --rdzv-endpoint=h:" + "9" * 5000 + " x.py\n"),
    "c5-nodes-directive-5000-digits": lone("#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --nodes=" + "9" * 5000
                                           + "\nset -euo pipefail\nsrun --kill-on-bad-exit=1 torchrun x.py\n"),
    "c5-nodes-directive-superscript": lone("#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --nodes=²-⁴"
                                           "\nset -euo pipefail\nsrun --kill-on-bad-exit=1 torchrun x.py\n"),
    "c5-source-name-too-long": lone(SH + "source \"$ROOT/" + "x" * 5000 + "/lib.sh\"\n", args=("--strict", "job.sbatch")),
    "c5-path-argument-too-long": {"files": {"keep": ""}, "args": ["x" * 5000 + ".sbatch"]},
    "c5-manifest-int-5000-digits": manifest_value("  num_layers: 12\n", "  num_layers: " + "9" * 5000 + "\n"),
    "c5-manifest-negative-4400-digits": manifest_value("  min: 1\n", "  min: -" + "9" * 4400 + "\n"),
    "c5-manifest-lone-surrogate": manifest_value("name: example\n", 'name: "\\ud800"\n'),
    "c5-manifest-surrogate-key": manifest_value("schema_version: 1\n", 'schema_version: 1\n"\\udfff": 1\n'),
    "c5-manifest-surrogate-summary": manifest_value("summary: GPU nodes", 'summary: "\\udc80"\nx_summary: GPU nodes'),
    "c5-non-utf8-file-name": {"files": {"keep": ""}, "args": ["b:6a6f62ff2e7362617463680a"],
                              "setup": [["write-bytes-name", "6a6f62ff2e7362617463680a", SH + "#SBATCH --tme=1\n"]]},
    "c5-non-utf8-preset-folder": {"files": {"keep": ""}, "args": [],
                                  "setup": [["copy-base-preset", "presets/ex\udcffample"]]},
    "c5-folder-is-not-a-preset": {"files": {"empty/keep": ""}, "args": ["empty"]},
    "c5-missing-path": {"files": {"keep": ""}, "args": ["nope.sbatch"]},
    "c5-folder-of-presets-none": {"files": {"a/b/keep": ""}, "args": ["a"]},
    "c5-bom-script": lone("\ufeff" + SH + "echo ok\n"),
    "c5-crlf-script": lone(SH.replace("\n", "\r\n") + "echo ok\r\n"),
    "c5-nul-script": lone(SH + "echo \x00\n"),
    "c5-latin1-script": {"files": {"job.sbatch": b"#!/bin/bash\necho caf\xe9\n"}, "args": ["job.sbatch"]},
    "c5-whitespace-only": lone(" \n\t\n"),
    "c5-empty-script": lone(""),
    "c5-manifest-missing": preset(setup=[["remove", "presets/example/preset.yaml"]]),
    "c5-manifest-is-folder": preset(setup=[["remove", "presets/example/preset.yaml"], ["mkdir", "presets/example/preset.yaml"]]),
    "c5-float-inf-value": manifest_value("    memory_gib: 24\n", "    memory_gib: .inf\n"),
    "c5-float-1e-400": manifest_value("    memory_gib: 24\n", "    memory_gib: 1e-400\n"),
    "c5-int-zero-per-node": manifest_value("    per_node: 8\n", "    per_node: 0\n"),
    "c5-dash-file-name": lone(SH + "echo $X\n", name="-e.sbatch", args=("--", "-e.sbatch"), shellcheck=True),
    "c5-shellcheck-silent-exit-1": lone(SH + "echo ok\n", shellcheck=True, env={"VALIDATOR_SHELLCHECK": "{fake-silent}"}),
    "c5-shellcheck-garbage": lone(SH + "echo ok\n", shellcheck=True, env={"VALIDATOR_SHELLCHECK": "{fake-garbage}"}),
    "c5-shellcheck-missing": lone(SH + "echo ok\n", shellcheck=True, env={"VALIDATOR_SHELLCHECK": "/nonexistent/shellcheck"}),
    "c5-shellcheck-opts-env": lone(SH + "echo $X\n", args=("--strict", "job.sbatch"), shellcheck=True, env={"SHELLCHECK_OPTS": "--exclude=SC2086 --severity=error"}),
    "c5-unknown-release": lone(SH, args=("--slurm-version", "99.99", "job.sbatch")),
    "c5-unknown-format": lone(SH, args=("--format", "xml", "job.sbatch")),
    # --- 6. output that cannot be forged ---------------------------------------------------------
    "c6-name-newline-forges-line": manifest_value("name: example\n", 'name: "x\\npresets/example/train.sbatch:1:1: error: forged [forged]"\n'),
    "c6-name-escape-sequence": manifest_value("name: example\n", 'name: "\\e[2J\\e[31mred"\n'),
    "c6-github-forged-command": manifest_value("name: example\n", 'name: "x\\n::warning file=a::forged"\n', format="github"),
    "c6-github-percent-comma-colon": manifest_value("name: example\n", 'name: "50%,a:b::c"\n', format="github"),
    "c6-github-file-name-comma": lone(SH + "#SBATCH --tme=1\n", name="a,b:c.sbatch", format="github"),
    "c6-sarif-uri-space-percent": lone(SH + "#SBATCH --tme=1\n", name="a b%20#c.sbatch", format="sarif"),
    "c6-file-name-newline": lone(SH + "#SBATCH --tme=1\n", name="a\nb.sbatch"),
    "c6-file-name-escape": lone(SH + "#SBATCH --tme=1\n", name="a\x1b[31m.sbatch"),
    "c6-bidi-override-value": manifest_value("name: example\n", 'name: "ab\\u202ecd"\n'),
    "c6-json-control-chars": manifest_value("name: example\n", 'name: "a\\x07b\\u2028c"\n', format="json"),
    "c6-directive-value-newline-like": lone(SH.replace("set -euo", "#SBATCH --tme=\u2028forged\nset -euo")),
    "c6-unknown-option-escape": lone("#!/bin/bash\n#SBATCH --\x1b[2Jtime=1\nset -euo pipefail\n"),
    # --- 7. lines counted as shellcheck and the rules count them --------------------------------
    "c7-vt-before-suppression": lone(SH + "# a\x0bb\n# validator: disable=security-eval -- demo\neval \"${1:-true}\"\n"),
    "c7-ff-before-suppression": lone(SH + "# a\x0cb\n# validator: disable=security-eval -- demo\neval \"${1:-true}\"\n"),
    "c7-u2028-before-suppression": lone(SH + "# a\u2028b\n# validator: disable=security-eval -- demo\neval \"${1:-true}\"\n"),
    "c7-nel-before-suppression": lone(SH + "# a\x85b\n# validator: disable=security-eval -- demo\neval \"${1:-true}\"\n"),
    "c7-vt-finding-line": lone(SH + "# a\x0bb\x0bc\neval \"$(cat \"${EXTRA:-/dev/null}\")\"\n", args=("--strict", "job.sbatch")),
    "c7-u2028-shellcheck-line": lone(SH + "# a\u2028b\n# validator: disable=SC2086 -- demo\necho ${1:-x}\n",
                                     args=("--strict", "job.sbatch"), shellcheck=True),
    "c7-u2028-shellcheck-no-suppression": lone(SH + "# a\u2028b\necho ${1:-x}\n", args=("--strict", "job.sbatch"), shellcheck=True),
    "c7-vt-shellcheck-line": lone(SH + "# a\x0bb\x0cc\necho ${1:-x}\n", args=("--strict", "job.sbatch"), shellcheck=True),
    "c7-yaml-nel-line": manifest_value("schema_version: 1\n", 'x: "a\x85b"\nschema_version: 1\n'),
    "c7-yaml-nel-suppression": preset(manifest=[("summary: GPU nodes joined", 'summary: "GPU nodes\x85joined'),
                                                ("(no InfiniBand, no RoCE); NCCL over TCP sockets.\n", '(no InfiniBand, no RoCE); NCCL over TCP sockets."\n'),
                                                ('  min_version: "22.05"\n', "  # validator: disable=yaml-ambiguous-scalar -- demo\n  min_version: 22.10\n")]),
    "c7-yaml-u2028-suppression": preset(manifest=[("summary: GPU nodes joined", 'summary: "GPU nodes\u2028joined'),
                                                  ("(no InfiniBand, no RoCE); NCCL over TCP sockets.\n", '(no InfiniBand, no RoCE); NCCL over TCP sockets."\n'),
                                                  ('  min_version: "22.05"\n', "  # validator: disable=yaml-ambiguous-scalar -- demo\n  min_version: 22.10\n")]),
    "c7-yaml-u2028-no-suppression": preset(manifest=[("summary: GPU nodes joined", 'summary: "GPU nodes\u2028joined'),
                                                     ("(no InfiniBand, no RoCE); NCCL over TCP sockets.\n", '(no InfiniBand, no RoCE); NCCL over TCP sockets."\n'),
                                                     ('  min_version: "22.05"\n', "  min_version: 22.10\n")]),
    # security-eval is strict-only: the column after a two-byte character is read in --strict
    "c7-non-ascii-column": lone(SH + 'echo "héllo"; eval "$(cat "${EXTRA:-/dev/null}")"\n', args=("--strict", "job.sbatch")),
    "c7-non-ascii-column-shellcheck": lone(SH + 'echo "héllo" ${1:-x}\n', args=("--strict", "job.sbatch"), shellcheck=True),
    "c7-cr-only-line": lone(SH + "echo a\reval \"${1:-true}\"\n"),
}


def write(name: str, case: dict) -> Path:
    folder = CASES_DIR / name
    if folder.exists():
        shutil.rmtree(folder)
    files = folder / "files"
    files.mkdir(parents=True)
    for rel, content in case["files"].items():
        path = files / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogateescape"))
    meta = {k: v for k, v in case.items() if k != "files"}
    (folder / "case.json").write_text(json.dumps(meta, indent=1, ensure_ascii=True) + "\n")
    return folder


def main(argv: list[str]) -> int:
    from test_hostile import load_case, run_case

    names = argv or sorted(CASES)
    for name in names:
        folder = write(name, CASES[name])
        meta = json.loads((folder / "case.json").read_text())
        code, first = run_case(load_case(folder), meta.get("format", "text"))
        meta["exit"], meta["first_line"] = code, first
        (folder / "case.json").write_text(json.dumps(meta, indent=1, ensure_ascii=True) + "\n")
        print(f"{name:40} {code}  {first[:150]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
