"""The image's software stack, checked inside the container before the first torchrun.

Run by the preflight stage on every node (one task per node, the image's python). It
1. builds Megatron's dataset helpers on this node: Megatron compiles them on global rank 0 only
   (megatron/training/initialize.py, _compile_dependencies, at the image's 5863c5b and core_v0.13.0)
   into its own source tree, and every node's pyxis container has a private root, while with
   --mock-data every rank imports megatron.core.datasets.helpers_cpp itself (gpt_dataset.py:
   path_to_cache is None for mock data): ModuleNotFoundError on every node but node 0
   (docs/preset-stack-review.md, finding 2). The build is what Megatron's compile_helpers() runs,
   `make -C <megatron>/megatron/core/datasets`, then an import of the module it makes;
2. records torch, NCCL (the one torch loaded), TransformerEngine, flash-attn and Megatron versions;
3. fails, with what to do, when the stack contradicts the preset: NCCL below the preset's nccl_min,
   an attention backend the TE + flash-attn pair cannot run, a Megatron release other than the
   manifest's stack, dataset helpers that do not import.

The preset's side reaches the container as environment (job-lib exports it from the manifest with
`python -m smoke.manifest env`): SMOKE_NCCL_MIN, SMOKE_STACK_MEGATRON, MEGATRON_ATTENTION.
A fact the image does not have (CPU torch in the local cluster's stand-in image, no TE) skips its
check and says so; nothing is guessed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata

from smoke import stack

BUILD_TIMEOUT_S = 600  # g++ -O3 of helpers.cpp takes about 20 s on one core


def _dist_version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a broken dist-info is "not installed" for this check
            continue
    return None


def megatron_version(megatron_dir: str) -> str | None:
    """Megatron's version as megatron/core/package_info.py states it (MAJOR, MINOR, PATCH,
    PRE_RELEASE), read as text: the image may not have it importable, and .git is removed."""
    path = os.path.join(megatron_dir, "megatron", "core", "package_info.py")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(1 << 16)
    except OSError:
        return None
    fields = dict(re.findall(r"^(MAJOR|MINOR|PATCH|PRE_RELEASE)\s*=\s*['\"]?([0-9A-Za-z]*)['\"]?\s*$", text, re.M))
    if not all(k in fields for k in ("MAJOR", "MINOR", "PATCH")):
        return None
    return f"{fields['MAJOR']}.{fields['MINOR']}.{fields['PATCH']}{fields.get('PRE_RELEASE', '')}"


def facts(megatron_dir: str) -> dict:
    """What this image has. torch is imported here (a few seconds, once per node)."""
    out: dict = {"torch": None, "nccl": None, "cuda_capability": None, "cudnn": None,
                 "transformer_engine": _dist_version("transformer_engine", "transformer-engine"),
                 "flash_attn": _dist_version("flash-attn", "flash_attn"),
                 "flash_attn_3": _dist_version("flashattn-hopper", "flash_attn_3"),
                 "megatron": megatron_version(megatron_dir)}
    try:
        import torch
    except ImportError:
        return out
    out["torch"] = torch.__version__
    if torch.cuda.is_available():
        try:
            version = torch.cuda.nccl.version()
            out["nccl"] = ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
        except Exception:  # noqa: BLE001 - torch without NCCL: said as unknown
            out["nccl"] = None
        major, minor = torch.cuda.get_device_capability()
        out["cuda_capability"] = f"{major}.{minor}"
        out["cudnn"] = torch.backends.cudnn.version()
    return out


def check_nccl(found: dict, nccl_min: str):
    if not nccl_min:
        return None, "the preset sets no nccl_min"
    if found["nccl"] is None:
        return None, "torch has no CUDA here: NCCL not loaded (not judged)"
    have, want = stack.version_key(found["nccl"]), stack.version_key(nccl_min)
    if have is None or want is None:
        return False, f"NCCL {found['nccl']} or the preset's nccl_min {nccl_min} is not a version"
    if have < want:
        return False, (f"the image's NCCL {found['nccl']} (as torch loads it) is below this preset's {nccl_min}: "
                       "use an image with a newer NCCL (SMOKE_IMAGE=...), or the preset's settings for "
                       f"NCCL {found['nccl']}")
    return True, f"NCCL {found['nccl']} >= {nccl_min}"


def check_attention(found: dict, backend: str):
    """The backend Megatron is asked for (--attention-backend) against what TE + flash-attn run."""
    if not backend:
        return None, "no MEGATRON_ATTENTION"
    if os.environ.get("MEGATRON_TRANSFORMER_IMPL") == "local":
        return None, "MEGATRON_TRANSFORMER_IMPL=local: Megatron's own unfused attention, no TransformerEngine backend"
    te = found["transformer_engine"]
    capability = stack.version_key(found["cuda_capability"]) if found["cuda_capability"] else None
    if capability is not None and capability < stack.version_key("8.0"):
        return False, (f"compute capability {found['cuda_capability']}: bf16 and TransformerEngine's fused "
                       "attention need sm80 or newer (A100, H100, GH200): choose GPUs of that generation")
    if te is None:
        return None, f"no TransformerEngine in this image: attention backend {backend} not judged"
    if backend == "flash":
        problem = stack.flash_problem(te, found["flash_attn"] or "none", found["flash_attn_3"])
        if problem:
            return False, (f"MEGATRON_ATTENTION=flash: {problem}; Megatron would stop at the first step with "
                           "'No dot product attention support': use MEGATRON_ATTENTION=fused")
    if backend == "fused" and isinstance(found["cudnn"], int) and found["cudnn"] < 8903:
        return False, (f"MEGATRON_ATTENTION=fused needs cuDNN 8.9.3 or newer for causal attention; the image "
                       f"has {found['cudnn']}: use an image with a newer cuDNN")
    return True, f"attention backend {backend} with TransformerEngine {te}, flash-attn {found['flash_attn'] or 'none'}"


def check_megatron(found: dict, expected: str):
    if found["megatron"] is None:
        return None, "no Megatron source in this image (megatron/core/package_info.py)"
    if not expected:
        return None, f"Megatron {found['megatron']}; the preset states no stack.megatron.version"
    if stack.version_key(found["megatron"]) != stack.version_key(expected):
        return False, (f"the image holds Megatron {found['megatron']}, the preset's stack says {expected}: its "
                       "flags and plan rules are that release's; fix stack.megatron in preset.yaml, or use the "
                       "image it names (SMOKE_STACK_MEGATRON overrides for one run)")
    return True, f"Megatron {found['megatron']}"


def build_helpers(megatron_dir: str, python: str = sys.executable):
    """Megatron's dataset helpers built on this node and imported (see the module's docstring)."""
    datasets = os.path.join(megatron_dir, "megatron", "core", "datasets")
    if not os.path.isfile(os.path.join(datasets, "helpers.cpp")):
        return None, f"no Megatron dataset source in {datasets}"
    try:
        build = subprocess.run(["make", "-C", datasets], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"make -C {datasets} did not run: {exc}"
    if build.returncode != 0:
        last = (build.stderr or build.stdout).strip().splitlines()[-1:] or ["no output"]
        return False, (f"building Megatron's dataset helpers failed on this node ({last[0][:200]}): the image needs "
                       "make, a C++ compiler, pybind11 and Python's headers (python3-dev)")
    env = dict(os.environ, PYTHONPATH=megatron_dir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    probe = subprocess.run([python, "-c", "import megatron.core.datasets.helpers_cpp"], capture_output=True,
                           text=True, timeout=300, env=env, cwd=megatron_dir)
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1:] or ["no output"]
        return False, f"megatron.core.datasets.helpers_cpp does not import after the build: {last[0][:200]}"
    return True, f"dataset helpers built and imported in {datasets}"


def run(mode_in_container: bool) -> tuple[dict, dict]:
    """(facts, checks) for preflight: checks name -> (ok or None, detail)."""
    if not mode_in_container:
        skipped = (None, "no image in functional mode: the host's Python runs")
        return {}, {"software_stack": skipped}
    megatron_dir = os.environ.get("MEGATRON_DIR", "/usr/src/app/megatron-lm")
    if os.environ.get("SMOKE_MEGATRON_HELPERS", "per-node") == "rank0":  # tests: what Megatron alone does
        helpers = (None, "SMOKE_MEGATRON_HELPERS=rank0: not built here (Megatron builds them on global rank 0 only)")
    else:
        helpers = build_helpers(megatron_dir)  # first: its import check must see this node's build
    found = facts(megatron_dir)
    return found, {
        "megatron_helpers": helpers,
        "megatron_release": check_megatron(found, os.environ.get("SMOKE_STACK_MEGATRON", "")),
        "nccl_version": check_nccl(found, os.environ.get("SMOKE_NCCL_MIN", "")),
        "attention_backend": check_attention(found, os.environ.get("MEGATRON_ATTENTION", "")),
    }
