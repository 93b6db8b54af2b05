"""Random manifests and scripts must never crash the validator: exit 0, 1 or 2 with a message."""
import os
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from validator.cli import main

BASE_MANIFEST = (FIXTURES / "ok" / "example" / "preset.yaml").read_text()
BASE_SCRIPT = (FIXTURES / "ok" / "example" / "train.sbatch").read_text()

yaml_scalars = st.one_of(st.text(max_size=12), st.integers(), st.sampled_from(
    ["no", "on", "4:00:00", "0755", "3.10", "~", "&a x", "*a", "!!int 1", "[1", "{a: 1}", "- x", "'", '"']))
yaml_lines = st.lists(st.tuples(st.text(string.ascii_lowercase + "_-<", min_size=1, max_size=10),
                                st.integers(0, 3), yaml_scalars), max_size=15)
sbatch_words = st.sampled_from(["--time=1", "-N", "2", "--gpus-per", "--x", "#", "\\", '"', "'", "-", "--",
                                "--export=NONE", "--container-image=a#b", "-vQ", "--mem=1", "--mem-per-gpu=1"])


def run(tmp_path, manifest: bytes, script: bytes, capsys) -> tuple[int, str, str]:
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    (folder / "preset.yaml").write_bytes(manifest)
    (folder / "train.sbatch").write_bytes(script)
    (folder / "README.md").write_text("# p\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["--no-shellcheck", "p"])
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    return code, out, err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=yaml_lines)
def test_random_manifests_never_crash(tmp_path, capsys, lines):
    text = "".join(f"{'  ' * depth}{key}: {value}\n" for key, depth, value in lines)
    code, out, err = run(tmp_path, text.encode(), BASE_SCRIPT.encode(), capsys)
    assert code in (0, 1, 2), err
    assert code == 0 or out.strip(), "a non-zero exit must say why"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_random_bytes_never_crash(tmp_path, capsys, data):
    code, out, err = run(tmp_path, data, data, capsys)
    assert code in (1, 2), err
    assert out.strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(directives=st.lists(st.lists(sbatch_words, min_size=1, max_size=5), max_size=6),
       prefix=st.sampled_from(["#SBATCH ", "# SBATCH ", "  #SBATCH ", "#SBATCH", "echo "]))
def test_random_directives_never_crash(tmp_path, capsys, directives, prefix):
    body = "".join(prefix + " ".join(words) + "\n" for words in directives)
    script = "#!/bin/bash\n" + body + "set -euo pipefail\n"
    code, out, err = run(tmp_path, BASE_MANIFEST.replace("name: example", "name: p").encode(),
                         script.encode(), capsys)
    assert code in (0, 1, 2), err
