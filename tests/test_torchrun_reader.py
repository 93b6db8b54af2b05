"""validator/rules/torchrun.py against torchrun's own parser (torch 2.13.0, pinned in pyproject.toml).

The reader keeps a copy of torchrun's option table so that the validator does not import torch; these tests
hold the copy to the parser that ships with the pinned torch, and the prefix rule to argparse's own answers.
"""
import argparse
import contextlib
import io

import pytest

from validator.rules import torchrun

run = pytest.importorskip("torch.distributed.run")


@pytest.fixture(scope="module")
def parser():
    return run.get_args_parser()


def test_the_option_table_is_torchruns(parser):
    strings = {s for action in parser._actions for s in action.option_strings}
    assert set(torchrun.OPTIONS) == {s for s in strings if s.startswith("--")}
    flags = {s for action in parser._actions if action.nargs == 0 for s in action.option_strings}
    assert torchrun.FLAGS == flags
    short_valued = {s for action in parser._actions if action.nargs != 0 for s in action.option_strings
                    if not s.startswith("--")}
    assert torchrun.SHORT_WITH_VALUE == short_valued


def _argparse_dest(parser, word):
    """The dest argparse gives `word 2 train.py` ("2": a value every option tested takes, int ones too, and none defaults to), "?"
    where it refuses the prefix as ambiguous."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            known = vars(parser.parse_args([word, "2", "train.py"]))
        except SystemExit:
            return "?" if "ambiguous option" in err.getvalue() else None
    default = vars(parser.parse_args(["train.py"]))
    changed = [k for k in known if known[k] != default[k] and k not in ("training_script", "training_script_args")]
    return changed[0] if len(changed) == 1 else None


@pytest.mark.parametrize("word", [
    "--nn", "--nnodes", "--nnode", "--rdzv", "--rdzv-b", "--rdzv_b", "--rdzv-e", "--master", "--master-p",
    "--master_p", "--mas", "--stand", "--node", "--node_r", "--node-r", "--nproc", "--nproc-per", "--no",
    "--max-r", "--log", "--logs",
])
def test_a_prefix_means_what_argparse_makes_of_it(parser, word):
    ours = torchrun.resolve(word)
    expected = _argparse_dest(parser, word)
    assert (torchrun.AMBIGUOUS if ours == torchrun.AMBIGUOUS else ours and torchrun.dest(ours)) == expected


def test_the_training_scripts_own_words_are_not_torchruns():
    line = torchrun.read("--nproc_per_node=4 train.py --nnodes 2 $ARGS".split(), 0)
    assert line.options == {"nproc_per_node": "4"} and not line.unseen and line.script == 1


def test_values_in_the_next_word_and_after_equals():
    line = torchrun.read("--nn 2 --rdzv-b=c10d --rdzv_endpoint $HOST:29500 --standalone main".split(), 0)
    assert line.options == {"nnodes": "2", "rdzv_backend": "c10d", "rdzv_endpoint": "$HOST:29500", "standalone": ""}
    assert not line.unseen and line.script == 6  # --standalone takes no value: `main` is the script


def test_an_expansion_where_an_option_may_stand_hides_options():
    assert torchrun.read(["$DISTRIBUTED_ARGS", "train.py"], 0).unseen
    assert not torchrun.read(["--node_rank", "$SLURM_NODEID", "train.py"], 0).unseen


def test_module_mode_ends_the_options():
    line = torchrun.read("--nnodes=1 -m pkg.train --nnodes=4".split(), 0)
    assert line.options == {"nnodes": "1"} and line.script == 1


def test_an_ambiguous_prefix_is_kept_apart():
    assert torchrun.AMBIGUOUS in torchrun.read(["--master=1", "t.py"], 0).options


def test_argparse_is_what_torchrun_uses():
    assert isinstance(run.get_args_parser(), argparse.ArgumentParser) and run.get_args_parser().allow_abbrev


def test_a_double_dash_ends_torchruns_options(parser):
    words = "--nnodes=1 -- train.py --nnodes=4".split()
    line = torchrun.read(words, 0)
    assert line.options == {"nnodes": "1"} and line.script == 2
    parsed = parser.parse_args(words)
    assert parsed.nnodes == "1" and parsed.training_script == words[line.script]
