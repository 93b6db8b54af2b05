"""The preset's manifest (presets/<name>/preset.yaml) as the job reads it: one reader, one behaviour.

The validator checks a manifest strictly (schema, positions, duplicate keys) before anyone submits;
the job only needs its values. PyYAML is the one dependency beyond the standard library: without it
(a host python3 with nothing installed) load() raises Unavailable, and every caller says so the same
way (the verdict's `expectations` WARN row; localization records it and judges without floors).
"""
from __future__ import annotations

import os
import re
import sys

NAME = "preset.yaml"
MAX_BYTES = 1 << 20  # the validator refuses larger manifests too


class Unavailable(Exception):
    """The manifest cannot be read here; the message says why and what to do."""


def load(preset_dir: str) -> dict:
    path = os.path.join(preset_dir, NAME)
    try:
        import yaml
    except ImportError:
        raise Unavailable("PyYAML is not installed for the Python that judges the run: install python3-yaml "
                          "on the batch host or pass SMOKE_VERDICT_PYTHON=<a python with PyYAML>") from None
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise Unavailable(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise Unavailable(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        value = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        raise Unavailable(f"{path}: not a manifest the validator accepts ({type(exc).__name__}): "
                          "python -m validator says where") from None
    if not isinstance(value, dict):
        raise Unavailable(f"{path}: not a mapping: python -m validator says where")
    return value


def section(manifest: dict, *keys: str) -> dict:
    """manifest[k1][k2]..., {} where a level is missing or not a mapping."""
    value = manifest
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def expectations(manifest: dict) -> dict:
    return section(manifest, "expectations")


def floor(manifest: dict, key: str) -> float | None:
    """expectations.<key>.min as a number, None when the preset sets none."""
    value = section(manifest, "expectations", key).get("min")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fabric(manifest: dict) -> str | None:
    value = section(manifest, "topology", "network").get("fabric")
    return value if isinstance(value, str) else None


# What the job's in-container checks need from the manifest, as environment (the container's python
# has no PyYAML guarantee): name -> path in the manifest.
JOB_ENV = {"SMOKE_NCCL_MIN": ("software", "nccl_min"), "SMOKE_STACK_MEGATRON": ("stack", "megatron", "version")}
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def job_env(manifest: dict) -> dict[str, str]:
    out = {}
    for name, path in JOB_ENV.items():
        value = section(manifest, *path[:-1]).get(path[-1])
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and _VALUE.fullmatch(str(value)):
            out[name] = str(value)
    return out


def main(argv: list[str]) -> int:
    """python -m smoke.manifest env PRESET_DIR: NAME=value lines for job-lib to export."""
    if len(argv) != 2 or argv[0] != "env":
        print("usage: python -m smoke.manifest env PRESET_DIR", file=sys.stderr)
        return 2
    try:
        values = job_env(load(argv[1]))
    except Unavailable as exc:
        print(f"smoke: the preset's manifest cannot be read by {sys.executable}: {exc}", file=sys.stderr)
        return 2
    for name, value in values.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
