"""What an image's software stack can run: versions as tuples, and TransformerEngine's flash-attn window.

The facts live in validator/data/te-flash-attn.json (read from TransformerEngine at each tag); the
in-job software preflight is meant to read the same file (docs/preset-stack-review.md).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

TE_FLASH_ATTN = Path(__file__).resolve().parent / "data" / "te-flash-attn.json"

# Megatron-LM's --attention-backend values (megatron/core/transformer/enums.py, AttnBackend).
ATTENTION_BACKENDS = ("flash", "fused", "unfused", "local", "auto")

_RELEASE = re.compile(r"(\d+(?:\.\d+)*)(?:\.?(post|dev)(\d+)|(a|b|rc)(\d+))?$")
_PRE = {"dev": 0, "a": 1, "b": 2, "rc": 3}


def version_key(text: str) -> tuple | None:
    """A package version as a comparable tuple (2.7.4.post1 > 2.7.4 > 2.7.4rc1), or None."""
    match = _RELEASE.match(str(text).strip())
    if not match:
        return None
    numbers = tuple(int(n) for n in match.group(1).split("."))
    numbers += (0,) * (4 - len(numbers)) if len(numbers) < 4 else ()
    if match.group(2) == "post":
        return numbers + (5, int(match.group(3)))
    if match.group(2) == "dev":
        return numbers + (0, int(match.group(3)))
    if match.group(4):
        return numbers + (_PRE[match.group(4)], int(match.group(5)))
    return numbers + (4, 0)


@lru_cache(maxsize=1)
def _te_releases() -> dict:
    return json.loads(TE_FLASH_ATTN.read_text(encoding="utf-8"))["releases"]


def te_flash_window(te_version: str) -> dict | None:
    """The flash-attn window of a TransformerEngine release (by major.minor), or None if unknown."""
    key = version_key(te_version)
    if key is None:
        return None
    return _te_releases().get(f"{key[0]}.{key[1]}")


def flash_problem(te_version: str, flash_attn: str, flash_attn_3: str | None) -> str | None:
    """Why TE's flash attention cannot run with this pair, or None when it can (or cannot be told)."""
    window = te_flash_window(te_version)
    if window is None:
        return (f"no flash-attn window is known for TransformerEngine {te_version} "
                f"(validator/data/te-flash-attn.json lists {', '.join(_te_releases())})")
    low, high = window["flash_attn_min"], window["flash_attn_max"]
    have = version_key(flash_attn) if flash_attn != "none" else None
    if have is not None and version_key(low) <= have <= version_key(high):
        return None
    if flash_attn_3 and window["flash_attn_2_required"] is not True:
        return None  # flash-attn 3 alone may serve this release: not checked, so not claimed
    found = "no flash-attn" if flash_attn == "none" else f"flash-attn {flash_attn}"
    return (f"TransformerEngine {te_version} uses flash-attn {low} to {high} only; with {found} it has no "
            f"flash backend{' (flash-attn 3 needs flash-attn 2 in that window too)' if flash_attn_3 else ''}")
