"""validator/rules/torchrun.py against torchrun's own parser (torch 2.13.0, pinned in pyproject.toml).

The reader keeps a copy of torchrun's option table so that the validator does not import torch; these tests
hold the copy to the parser that ships with the pinned torch, and the prefix rule to argparse's own answers.
"""
import argparse
import contextlib
import io

import pytest

from validator.rules import torchrun

from torch.distributed import run  # torch is a test dependency (pyproject.toml): never skipped


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
    for short, long in torchrun.SHORT.items():  # each short option is the same action as the long one named for it
        assert any(short in a.option_strings and long in a.option_strings for a in parser._actions)


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


def test_module_mode_is_a_flag_options_follow_it(parser):
    # torchrun's -m runs the script as a module; options may follow it (OLMo's `torchrun -m --nproc_per_node=4 ...`)
    for words in ("--nnodes=1 -m pkg.train --nnodes=4".split(), "-m --nproc_per_node=4 scripts.train cfg".split()):
        line = torchrun.read(words, 0)
        parsed = parser.parse_args(words)
        assert parsed.module and parsed.training_script == words[line.script]
        assert line.options.get("nnodes", "1:1") == parsed.nnodes
        assert line.options.get("nproc_per_node", "1") == str(parsed.nproc_per_node)


def test_values_that_look_like_scripts_and_short_options(parser):
    for words in (["--log-dir=out.py", "train.py"], ["-r3", "-t", "3", "train.py"], ["--nnodes=2", "-", "x"]):
        line = torchrun.read(words, 0)
        parsed = parser.parse_args(words)
        assert parsed.training_script == words[line.script]
    assert torchrun.read(["-r3", "train.py"], 0).options == {"redirects": "3"}


class _Arg:
    def __init__(self, text, col):
        self.raw = self.value = text
        self.line, self.col, self.node = 7, col, None


class _Command:
    def __init__(self, name, text):
        self.name, self.args, col = name, [], len(name) + 2
        for word in text.split():
            self.args.append(_Arg(word, col))
            col += len(word) + 1


def test_option_gives_the_value_word_where_it_stands():
    command = _Command("torchrun", "--nn=2 --nproc-per 4 --standalone -m pkg --nnodes 8")
    word = torchrun.option(command, "nnodes")
    assert (word.value, word.col) == ("2", 10 + len("--nn="))  # the script's own --nnodes 8 is not torchrun's
    assert torchrun.option(command, "nproc_per_node").value == "4"
    assert torchrun.option(command, "standalone").value == ""
    python = _Command("python", "-m torch.distributed.run --nnodes=3 t.py")
    assert torchrun.option(python, "nnodes").value == "3" and torchrun.option(python, "module") is None


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
