"""scripts/megatron-node's argument list for pretrain_gpt.py: the one Megatron-LM's own parser accepted.

tests/fixtures/megatron-parser/<release>.json is a recording, for the Megatron the presets' image holds
(software.megatron in every manifest): that Megatron's parse_args and validate_args read
megatron-node's list for each preset (bench/pretrain_gpt/record_parser.py).
Here a stand-in for torchrun (a test double: the real one needs GPUs) writes the list megatron-node
builds today; a flag added, renamed or dropped fails until the list is confirmed again.
"""
import json
import os
import subprocess

import pytest
import yaml

from conftest import FIXTURES, ROOT

RELEASES = {yaml.safe_load((p / "preset.yaml").read_text())["software"]["megatron"]
            for p in (ROOT / "presets").iterdir() if (p / "preset.yaml").is_file()}
assert len(RELEASES) == 1, f"one recording per Megatron release: {RELEASES}"
(RELEASE,) = RELEASES
RECORDED = json.loads((FIXTURES / "megatron-parser" / f"{RELEASE}.json").read_text())
FLAGS = {line.strip() for line in (ROOT / "validator" / "data" / "megatron-flags" / f"{RELEASE}.txt").read_text().splitlines()
         if line.startswith("--")}


def megatron_node(tmp_path, preset, **env):
    """Run scripts/megatron-node as one Slurm task with the preset's MEGATRON_* defaults; return
    (exit code, stderr, the arguments pretrain_gpt.py would get)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "torchrun").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')  # stand-in for torchrun
    (bin_dir / "torchrun").chmod(0o755)
    out = tmp_path / "args.txt"
    base = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SMOKE_ROOT": str(ROOT), "SMOKE_OUT": "/smoke-out",
            "SLURM_GPUS_ON_NODE": "1", "SLURM_NNODES": "1", "SLURM_JOB_ID": "5", "MASTER_ADDR": "node1",
            "MASTER_PORT": "20005", "MEGATRON_DIR": "/mlm", "ARGS_OUT": str(out)}
    script = f'set -a; eval "$(grep "^export MEGATRON_" presets/{preset}/train.sbatch)"; exec scripts/megatron-node'
    proc = subprocess.run(["bash", "-c", script], cwd=ROOT, env={**base, **env}, capture_output=True, text=True)
    words = out.read_text().splitlines() if out.exists() else []
    at = next((i for i, w in enumerate(words) if w.endswith("pretrain_gpt.py")), None)
    return proc.returncode, proc.stderr, words[at + 1:] if at is not None else None


@pytest.mark.parametrize("run", RECORDED["runs"], ids=lambda r: f"{r['preset']}-{r['MEGATRON_TRANSFORMER_IMPL']}")
def test_argument_list_is_the_one_megatron_parser_accepted(tmp_path, run):
    assert run["accepted"] is True
    code, err, args = megatron_node(tmp_path, run["preset"], MEGATRON_TRANSFORMER_IMPL=run["MEGATRON_TRANSFORMER_IMPL"])
    assert code == 0, err
    assert args == run["args"], "megatron-node's list changed: confirm it with bench/pretrain_gpt/record_parser.py"
    assert {a for a in args if a.startswith("--")} <= FLAGS


def test_local_implementation_asks_for_no_fused_kernel(tmp_path):
    code, err, args = megatron_node(tmp_path, "gh200", MEGATRON_TRANSFORMER_IMPL="local")
    assert code == 0, err
    assert args[args.index("--transformer-impl") + 1] == "local"
    assert args[args.index("--attention-backend") + 1] == "unfused"  # the local layers' own attention
    assert {"--no-rope-fusion", "--no-gradient-accumulation-fusion", "--no-persist-layer-norm",
            "--no-masked-softmax-fusion", "--no-bias-swiglu-fusion"} <= set(args)
    code, err, args = megatron_node(tmp_path, "gh200")
    assert args[args.index("--transformer-impl") + 1] == "transformer_engine"
    assert args[args.index("--attention-backend") + 1] == "fused" and "--no-rope-fusion" not in args


def test_unknown_transformer_implementation_stops_with_the_choices(tmp_path):
    code, err, args = megatron_node(tmp_path, "gh200", MEGATRON_TRANSFORMER_IMPL="te")
    assert code == 2 and args is None
    assert "MEGATRON_TRANSFORMER_IMPL must be transformer_engine or local, not 'te'" in err


def test_local_implementation_leaves_out_sequence_parallelism(tmp_path):
    """torch's norms (local layers without Apex) refuse sequence parallelism (Megatron's WrappedTorchNorm)."""
    code, err, args = megatron_node(tmp_path, "h100-ib-8port", SLURM_GPUS_ON_NODE="8", MEGATRON_TENSOR_PARALLEL="8",
                                    MEGATRON_TRANSFORMER_IMPL="local")
    assert code == 0, err
    assert args[args.index("--tensor-model-parallel-size") + 1] == "8" and "--sequence-parallel" not in args
    code, err, args = megatron_node(tmp_path, "h100-ib-8port", SLURM_GPUS_ON_NODE="8", MEGATRON_TENSOR_PARALLEL="8")
    assert "--sequence-parallel" in args
