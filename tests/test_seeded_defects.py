"""Copies of the real presets with one defect seeded: the validator names it, on the right line."""
import json
import shutil

import pytest

from conftest import ROOT, edited_preset, run_validator

S, M = "train.sbatch", "preset.yaml"
CASES = [  # preset, file, old, new, rule, text on the reported line
    ("gh200", S, "#SBATCH --time=00:30:00", "#SBATCH --time=01:30:00", "xcheck-directives", "#SBATCH --time=01:30:00"),
    ("gh200", S, "#SBATCH --time=00:30:00 ", "#SBATCH --nodes=2 ", "launch-node-count", "#SBATCH --nodes=2"),
    ("gh200", S, "NCCL_NET_GDR_C2C:-1}", "NCCL_NET_GDR_C2C:-0}", "xcheck-environment", "NCCL_NET_GDR_C2C:-0"),
    ("gh200", S, "export SLURM_EXPORT_ENV=ALL ", "export SLURM_EXPORTED=ALL ", "launch-export-none", "#SBATCH --export=NONE"),
    ("gh200", S, "aarch64  # SMOKE_IMAGE", "x86_64  # SMOKE_IMAGE", "xcheck-image", "smoke_container"),
    ("gh200", M, "image_arches: [amd64, arm64]", "image_arches: [amd64]", "xcheck-image", "image_arches"),
    ("h100-ib-8port", S, "NCCL_COLLNET_ENABLE:-1}", "NCCL_COLLNET_ENABLE:-0}", "xcheck-environment", "NCCL_COLLNET_ENABLE:-0"),
    ("h100-ib-8port", S, "export CUDA_DEVICE_MAX_CONNECTIONS=1", "export NCCL_NVLS_ENABLE=0", "policy-collnet-nvls", "NCCL_NVLS_ENABLE=0"),
    ("h100-ib-8port", S, "export UCX_TLS=${UCX_TLS:-tcp}  ", "export NCCL_IB_DISABLE=1", "policy-fabric", "NCCL_IB_DISABLE=1"),
    ("ethernet-only", S, "export UCX_TLS=${UCX_TLS:-tcp}  ", "export NCCL_IB_HCA=mlx5_", "policy-fabric", "NCCL_IB_HCA=mlx5_"),
    ("ethernet-only", S, "export UCX_TLS=${UCX_TLS:-tcp}  ", "export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
     "policy-8port-list", "NCCL_IB_HCA=mlx5_0"),
    ("ethernet-only", S, "export NCCL_NET_PLUGIN=${NCCL_NET_PLUGIN:-none} ", "export NCCL_NETPLUGIN=${NCCL_NETPLUGIN:-none} ", "policy-net-plugin", None),
    ("ethernet-only", S, "MEGATRON_SEQ_LENGTH:-2048", "MEGATRON_SEQ_LENGTH:-4096", "xcheck-megatron", "MEGATRON_SEQ_LENGTH"),
    ("ethernet-only", S, "set -euo pipefail", "set -eu", "launch-strict-mode", None),
    # the sourced scripts/job-lib.sh reads the wandb key: xtrace in the preset prints it
    ("ethernet-only", S, "set -euo pipefail", "set -euxo pipefail", "security-xtrace", "set -euxo pipefail"),
    ("ethernet-only", S, "source \"${SMOKE_ROOT:-$SLURM_SUBMIT_DIR}", "source \"$(dirname \"$0\")/../..", "launch-script-path", "dirname"),
    ("ethernet-only", S, "smoke_wandb\n", "smoke_wandb\necho \"key $WANDB_API_KEY\"\n", "security-secret-echo", "echo"),
    ("ethernet-only", M, "    nic_gbps: 100\n", "    nic_gbps: 100\n    speed: fast\n", "manifest-schema", "speed"),
    # RoCE: NCCL's IB transport must stay on, and NCCL >= 2.21 picks the RoCE v2 GID itself
    ("roce", S, "export UCX_TLS=${UCX_TLS:-tcp}  ", "export NCCL_IB_DISABLE=1", "policy-fabric", "NCCL_IB_DISABLE=1"),
    ("roce", S, "export UCX_TLS=${UCX_TLS:-tcp}  ", "export NCCL_IB_GID_INDEX=3", "policy-fabric", "NCCL_IB_GID_INDEX=3"),
    # identity: a copy that still calls itself by the original's name
    ("roce", S, "smoke_init roce 1 256", "smoke_init h100-ib-8port 1 256", "xcheck-identity", "smoke_init"),
    # issue 25: a KEY=VALUE setting overwritten, a backend the image cannot run, GPUs asked the cons_tres way
    ("gh200", S, "export NCCL_NET=${NCCL_NET:-IB}", "export NCCL_NET=IB", "launch-setting-shadowed", "NCCL_NET=IB"),
    ("h100-ib-8port", S, "MEGATRON_ATTENTION:-fused}", "MEGATRON_ATTENTION:-flash}", "xcheck-attention-backend", "MEGATRON_ATTENTION"),
    ("roce", S, "#SBATCH --gpus-per-node=8", "#SBATCH --gpus-per-task=8", "sbatch-gpus-select-plugin", "--gpus-per-task=8"),
    ("gh200", M, 'nccl_min: "2.25"', 'nccl_min: "2.26"', "xcheck-stack", "nccl: 2.25.1"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}:{c[4]}" for c in CASES])
def test_seeded_defect_is_reported_on_its_line(tmp_path, case):
    preset, fname, old, new, rule, marker = case
    copy = edited_preset(tmp_path, preset, {fname: [(old, new)]}, into=tmp_path / "presets")
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")  # what the presets source
    proc = run_validator("--format", "json", str(copy))
    assert proc.returncode == 1, proc.stderr
    hits = [f for f in json.loads(proc.stdout) if f["rule"] == rule]
    assert hits, f"{rule} not reported; got {proc.stdout}"
    if marker:
        lines = (copy / fname).read_text().splitlines()
        assert any(marker in lines[h["line"] - 1] for h in hits if h["path"].endswith(fname)), hits
