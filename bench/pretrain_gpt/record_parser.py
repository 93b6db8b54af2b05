"""Records what Megatron-LM's own argument parser says of the list scripts/megatron-node builds for
every preset (tests/fixtures/megatron-parser/<release>.json, which tests/test_megatron_node.py holds
megatron-node to). CPU only: bench/pretrain_gpt/parse_check.py stands in for torchrun.

    .venv/bin/python bench/pretrain_gpt/record_parser.py --megatron DIR --release NAME --commit SHA \
        --deps DIR [--te-stub bench/pretrain_gpt/te_stub]

DIR: a Megatron-LM tree at that commit (git archive SHA megatron pretrain_gpt.py); --deps: a folder
with numpy, six, regex, packaging, einops (pip install --target). Megatron main 5863c5b imports
TransformerEngine while its parser loads: --te-stub puts the TEST DOUBLE of TE 1.13 on the path.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPLS = ("transformer_engine", "local")


def presets() -> list[str]:
    return sorted(p.name for p in (ROOT / "presets").iterdir() if (p / "preset.yaml").is_file())


def run(preset: str, impl: str, megatron: str, pythonpath: str, bin_dir: str) -> dict:
    script = f'set -a; eval "$(grep "^export MEGATRON_" presets/{preset}/train.sbatch)"; exec scripts/megatron-node'
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SMOKE_ROOT": str(ROOT), "SMOKE_OUT": "/smoke-out",
           "SLURM_GPUS_ON_NODE": "1", "SLURM_NNODES": "1", "SLURM_JOB_ID": "5", "MASTER_ADDR": "node1",
           "MASTER_PORT": "20005", "MEGATRON_DIR": megatron, "MEGATRON_TRANSFORMER_IMPL": impl, "PYTHONPATH": pythonpath}
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    line = next((l for l in reversed(out.stdout.splitlines()) if l.startswith("{")), None)
    if line is None:
        raise SystemExit(f"{preset}/{impl}: no answer from the parser:\n{out.stderr[-3000:]}")
    return {"preset": preset, "MEGATRON_TRANSFORMER_IMPL": impl, **json.loads(line), "gpus": 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--deps", required=True)
    parser.add_argument("--te-stub")
    args = parser.parse_args()
    pythonpath = os.pathsep.join(p for p in (args.megatron, args.deps, args.te_stub) if p)
    with tempfile.TemporaryDirectory() as bin_dir:
        torchrun = Path(bin_dir) / "torchrun"
        torchrun.write_text(f'#!/bin/bash\nexec {sys.executable} {ROOT}/bench/pretrain_gpt/parse_check.py "$@"\n')
        torchrun.chmod(0o755)
        runs = [run(p, impl, args.megatron, pythonpath, bin_dir) for p in presets() for impl in IMPLS]
    record = {"what": f"Megatron-LM {args.release}'s own argument parser (parse_args + validate_args, CPU) on the "
                      "argument list scripts/megatron-node builds for each preset at 1 node x 1 GPU; recorded by "
                      "bench/pretrain_gpt/record_parser.py with bench/pretrain_gpt/parse_check.py standing in for torchrun"
                      + (" and the TEST DOUBLE of TransformerEngine 1.13 (bench/pretrain_gpt/te_stub: the parser imports "
                         "TE; nothing of it runs)" if args.te_stub else ""),
              "megatron_lm": f"{args.release} ({args.commit})", "date": datetime.date.today().isoformat(),
              "not_checked": "TP > 1 (validate_args needs CUDA there): the 8-GPU list of h100-ib-8port adds "
                             "--sequence-parallel, a flag in the list",
              "runs": runs}
    out = ROOT / "tests" / "fixtures" / "megatron-parser" / f"{args.release}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    rejected = [f"{r['preset']}/{r['MEGATRON_TRANSFORMER_IMPL']}" for r in runs if not r.get("accepted")]
    print(f"{out}: {len(runs)} runs, rejected: {', '.join(rejected) or 'none'}")
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
