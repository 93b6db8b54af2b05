"""scripts/megatron-node's argument list for pretrain_gpt.py: the one Megatron-LM's own parser accepted.

tests/fixtures/megatron-parser/core_v0.13.0.json is a recording: Megatron-LM core_v0.13.0's parse_args
and validate_args read megatron-node's list for each preset (bench/pretrain_gpt/parse_check.py).
Here a stand-in for torchrun (a test double: the real one needs GPUs) writes the list megatron-node
builds today; a flag added, renamed or dropped fails until the list is confirmed again.
"""
import json
import os
import subprocess

import pytest

from conftest import FIXTURES, ROOT

# One recording per Megatron-LM release: core_v0.13.0, and the pinned image's own main 5863c5b.
RECORDINGS = {path.stem: json.loads(path.read_text()) for path in sorted((FIXTURES / "megatron-parser").glob("*.json"))}
FLAGS = {release: {line.strip() for line in (ROOT / "validator" / "data" / "megatron-flags" / f"{release}.txt").read_text().splitlines()
                   if line.startswith("--")} for release in RECORDINGS}
RUNS = [(release, run) for release, recorded in RECORDINGS.items() for run in recorded["runs"]]


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


@pytest.mark.parametrize("release, run", RUNS, ids=[f"{r}-{run['preset']}-{run['MEGATRON_TRANSFORMER_IMPL']}" for r, run in RUNS])
def test_argument_list_is_the_one_megatron_parser_accepted(tmp_path, release, run):
    assert run["accepted"] is True
    code, err, args = megatron_node(tmp_path, run["preset"], MEGATRON_TRANSFORMER_IMPL=run["MEGATRON_TRANSFORMER_IMPL"])
    assert code == 0, err
    assert args == run["args"], "megatron-node's list changed: confirm it with bench/pretrain_gpt/parse_check.py"
    assert {a for a in args if a.startswith("--")} <= FLAGS[release]


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
