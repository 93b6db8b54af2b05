"""smoke.software: the image's stack read from what an image carries (dist-info metadata, Megatron's
package_info.py, a dataset source tree), and the checks that fail a run before its first torchrun.
The "images" here are folders with those files (test doubles of an image's metadata); the local
cluster's Megatron stand-in runs the same code under pyxis (tests/test_e2e_container.py)."""
import json
import os
import subprocess
import sys

import pytest

from smoke import software


def image(tmp_path, te=None, flash=None, megatron=None, helpers_source=False):
    """A site-packages folder with the packages' metadata, and a Megatron tree."""
    site = tmp_path / "site"
    site.mkdir(parents=True)
    for name, version in (("transformer_engine", te), ("flash_attn", flash)):
        if version:
            info = site / f"{name}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    tree = tmp_path / "megatron-lm"
    (tree / "megatron" / "core" / "datasets").mkdir(parents=True)
    if megatron:
        major, minor, patch, pre = megatron
        (tree / "megatron" / "core" / "package_info.py").write_text(
            f"MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = '{pre}'\n")
    if helpers_source:
        (tree / "megatron" / "core" / "datasets" / "helpers.cpp").write_text("int broken(\n")
        (tree / "megatron" / "core" / "datasets" / "Makefile").write_text("all:\n\tg++ -c helpers.cpp -o /dev/null\n")
    return site, tree


def facts_in(site, tree):
    """software.facts() in a process whose Python sees that site folder, as the image's would."""
    code = f"import json; from smoke import software; print(json.dumps(software.facts({str(tree)!r})))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site)] + sys.path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_the_pinned_images_stack_is_read_from_its_metadata(tmp_path):
    found = facts_in(*image(tmp_path, te="1.13.0", flash="2.7.4.post1", megatron=(0, 12, 0, "rc0")))
    assert (found["transformer_engine"], found["flash_attn"], found["megatron"]) == ("1.13.0", "2.7.4.post1", "0.12.0rc0")


def test_flash_with_te_1_13_and_flash_attn_2_7_4_fails_before_training(tmp_path):
    """Finding 1: TE 1.13 takes flash-attn 2.1.1-2.6.3 only; Megatron's `flash` switches the other
    backends off, and the first step raises "No dot product attention support"."""
    found = facts_in(*image(tmp_path, te="1.13.0", flash="2.7.4.post1"))
    ok, detail = software.check_attention(found, "flash")
    assert ok is False and "use MEGATRON_ATTENTION=fused" in detail
    assert software.check_attention(found, "fused")[0] is True
    assert software.check_attention(facts_in(*image(tmp_path / "b", te="1.13.0", flash="2.6.3")), "flash")[0] is True


def test_a_megatron_release_other_than_the_manifests_fails(tmp_path):
    found = facts_in(*image(tmp_path, megatron=(0, 13, 0, "")))
    ok, detail = software.check_megatron(found, "0.12.0rc0")
    assert ok is False and "holds Megatron 0.13.0, the preset's stack says 0.12.0rc0" in detail
    assert software.check_megatron(found, "0.13.0")[0] is True
    assert software.check_megatron(facts_in(*image(tmp_path / "b")), "0.12.0rc0")[0] is None  # no source: said


@pytest.mark.parametrize("nccl, ok", [("2.25.1", False), ("2.26.2", True), ("2.27.3", True)])
def test_nccl_below_the_presets_minimum_fails(nccl, ok):
    result, detail = software.check_nccl({"nccl": nccl}, "2.26")
    assert result is ok and (ok or "below this preset's 2.26" in detail)
    assert software.check_nccl({"nccl": None}, "2.26")[0] is None  # CPU torch (the stand-in): not judged


def test_bf16_below_sm80_fails():
    ok, detail = software.check_attention({"transformer_engine": "1.13.0", "flash_attn": None, "flash_attn_3": None,
                                           "cuda_capability": "7.0", "cudnn": 90100}, "fused")
    assert ok is False and "sm80" in detail


def test_helpers_that_do_not_build_fail_with_what_to_do(tmp_path):
    _, tree = image(tmp_path, helpers_source=True)
    ok, detail = software.build_helpers(str(tree))
    assert ok is False and "needs make, a C++ compiler, pybind11" in detail
    assert software.build_helpers(str(tmp_path / "none"))[0] is None
