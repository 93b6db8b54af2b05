"""The image-stack facts the new rules use: version order, TE's flash-attn windows, job-lib's families."""
import json
import re

from conftest import ROOT
from validator.rules import launch_setting_shadowed
from validator.shell import parse_shell
from smoke.stack import TE_FLASH_ATTN, flash_problem, te_flash_window, version_key


def test_versions_order_as_pip_does():
    ordered = ["2.6.3", "2.7.4.dev1", "2.7.4rc1", "2.7.4", "2.7.4.post1", "2.8"]
    assert sorted(ordered, key=version_key) == ordered
    assert version_key("1.13") == version_key("1.13.0")
    assert version_key("main") is None


def test_te_1_13_has_no_flash_backend_with_the_images_flash_attn():
    # TransformerEngine v1.13 attention.py: _flash_attn_version_required 2.1.1, _flash_attn_max_version 2.6.3
    assert te_flash_window("1.13.0") == {"flash_attn_min": "2.1.1", "flash_attn_max": "2.6.3", "flash_attn_2_required": True}
    assert "2.1.1 to 2.6.3" in flash_problem("1.13", "2.7.4.post1", "2.7.2.post1 hopper")
    assert flash_problem("1.13", "2.6.3", None) is None
    assert flash_problem("2.1", "2.7.4.post1", None) is None
    assert "no flash-attn window is known" in flash_problem("0.9", "2.6.3", None)


def test_every_window_is_ordered():
    for release, window in json.loads(TE_FLASH_ATTN.read_text())["releases"].items():
        assert version_key(window["flash_attn_min"]) < version_key(window["flash_attn_max"]), release


def test_setting_families_are_job_libs():
    """The rule's families are the ones scripts/job-lib.sh accepts as KEY=VALUE."""
    lib = (ROOT / "scripts" / "job-lib.sh").read_text()
    pattern = re.search(r"^SMOKE_SETTING_NAMES='([^']+)'", lib, re.M).group(1)
    assert pattern == launch_setting_shadowed.SETTING_NAMES.pattern


def test_a_quoted_default_is_read_as_its_default():
    names = {a.name: a.value for a in parse_shell('export A="${A:-x y}"\nexport B=${B:-z}\nexport C="${D:-w}"\n').assignments}
    assert names == {"A": "x y", "B": "z", "C": None}
