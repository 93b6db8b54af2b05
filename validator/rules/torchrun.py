"""How torchrun reads its command line, shared by the launch rules: which words are torchrun's own options
(and their values) and which word is the training script.

torchrun's parser is get_args_parser() in torch/distributed/run.py (torch 2.13.0, as installed here;
`python -m torch.distributed.launch` uses the same parser and run()). argparse's allow_abbrev takes any
prefix that exactly one option string starts with (`--nn` is --nnodes; `--rdzv` and `--master` match
several and torchrun stops with "ambiguous option"), a value after '=' or in the next word; the first
word that is no option and no option's value is the training script (also after `--`, or a lone `-`), and the
words after it are the script's own (torchrun never reads them). `-m` (--module) is a flag: options may follow it
(`torchrun -m --nproc_per_node=4 scripts.train`, OLMo's Slurm script: a review's probe). `python -m
torch.distributed.launch` reads these options too, and its own --use-env (launch.py), which is no option here and
is passed over as an unknown word.
"""
from __future__ import annotations

import re
from typing import NamedTuple

# Every option string of torchrun's parser at torch 2.13.0 (`[s for a in get_args_parser()._actions for s in
# a.option_strings]`), and those of them that take no value (store_true and help).
OPTIONS = (
    "--duplicate-stderr-filters", "--duplicate-stdout-filters", "--duplicate_stderr_filters",
    "--duplicate_stdout_filters", "--event-log-handler", "--event_log_handler", "--help", "--local-addr",
    "--local-ranks-filter", "--local_addr", "--local_ranks_filter", "--log-dir", "--log_dir", "--logs-specs",
    "--logs_specs", "--master-addr", "--master-port", "--master_addr", "--master_port", "--max-restarts",
    "--max_restarts", "--module", "--monitor-interval", "--monitor_interval", "--nnodes", "--no-python",
    "--no_python", "--node-rank", "--node_rank", "--nproc-per-node", "--nproc_per_node", "--numa-binding",
    "--numa_binding", "--rdzv-backend", "--rdzv-conf", "--rdzv-endpoint", "--rdzv-id", "--rdzv_backend",
    "--rdzv_conf", "--rdzv_endpoint", "--rdzv_id", "--redirects", "--role", "--run-path", "--run_path",
    "--shutdown-timeout", "--shutdown_timeout", "--signals-to-handle", "--signals_to_handle", "--standalone",
    "--start-method", "--start_method", "--tee", "--virtual-local-rank", "--virtual_local_rank",
)
FLAGS = frozenset({"--help", "--module", "--no-python", "--no_python", "--run-path", "--run_path", "--standalone",
                   "--virtual-local-rank", "--virtual_local_rank", "-h", "-m"})
SHORT_WITH_VALUE = frozenset({"-r", "-t"})  # --redirects, --tee: a value in the next word or glued (`-r3`)
SHORT = {"-r": "--redirects", "-t": "--tee", "-h": "--help", "-m": "--module"}  # the long option each one is
AMBIGUOUS = "?"  # the key under which a prefix that matches several options is kept (torchrun refuses the line)


class TorchrunLine(NamedTuple):
    options: dict  # dest ("nnodes", "rdzv_backend", "standalone") -> its last value ("" for a flag)
    unseen: bool  # an expansion stands where an option may (`torchrun $ARGS train.py`): options the text hides
    script: int  # index of the training script in the words; len(words) when none


def resolve(name: str) -> str | None:
    """The option string argparse takes `name` for (`--nn` -> --nnodes, `-t` -> --tee), AMBIGUOUS when several start
    with it, None when none does (a word torchrun refuses)."""
    if name in OPTIONS or name in SHORT:
        return SHORT.get(name, name)
    found = [option for option in OPTIONS if option.startswith(name)] if name.startswith("--") and len(name) > 2 \
        else []
    return found[0] if len(found) == 1 else (AMBIGUOUS if found else None)


def dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def _scan(texts: list[str], start: int):
    """torchrun's options in texts[start:] as its parser reads them: ([(dest or AMBIGUOUS, value, index of the option's
    word, index of the word holding the value or None for a flag, where the value starts in that word)], unseen,
    index of the training script). One loop for read() and option()."""
    found, unseen, k = [], False, start
    while k < len(texts):
        text = texts[k]
        if text.lstrip("\"'").startswith(("$", "`")):
            unseen = True  # `$DISTRIBUTED_ARGS`, "$@", $(cat args): any option, or the script itself
            k += 1
            continue
        if text == "--":  # argparse's end of options: the training script follows
            return found, unseen, k + 1
        if not text.startswith("-") or text == "-":
            break  # the training script
        name, has_value, value = text.partition("=")
        at = len(name) + 1
        if name[:2] in SHORT_WITH_VALUE and len(name) > 2 and not name.startswith("--"):
            name, has_value, value, at = name[:2], "=", text[2:], 2  # `-r3`: the value glued to the letter
        option = resolve(name)
        if option is None:
            k += 1  # torchrun refuses a word it does not know; read on (the safe side)
            continue
        takes_value = option not in FLAGS and option != AMBIGUOUS
        key = AMBIGUOUS if option == AMBIGUOUS else dest(option)
        if has_value:
            found.append((key, value, k, k, at))
        elif takes_value and k + 1 < len(texts):
            found.append((key, texts[k + 1], k, k + 1, 0))
            k += 1
        else:
            found.append((key, "", k, None, 0))
        k += 1
    return found, unseen, k


def read(words: list[str], start: int) -> TorchrunLine:
    """torchrun's options in words[start:], words[start - 1] being torchrun (or the launcher module's name)."""
    found, unseen, script = _scan(words, start)
    return TorchrunLine({key: value for key, value, *_ in found}, unseen, script)


def start_of(command) -> int:
    """Where torchrun's own words begin in a launcher command's arguments (base.is_launcher): after python's
    `-m torch.distributed.run`; at once for torchrun, whose own -m is a flag."""
    python = command.name.rsplit("/", 1)[-1].startswith("python")
    return 2 if python and [a.value for a in command.args[:1]] == ["-m"] else 0


def option(command, *dests: str):
    """The Word that gives a launcher command (base.is_launcher: torchrun, `python -m torch.distributed.run`) the
    option of one of `dests` ("nnodes", "nproc_per_node", "standalone"), as its parser reads it: the last one given
    wins (argparse's store), a flag gives a Word whose value is ''; None where none is given among torchrun's own
    words (the training script's words are not torchrun's)."""
    from validator.shell import Word

    args = command.args
    found, _, _ = _scan([a.value if a.value is not None else a.raw for a in args], start_of(command))
    for key, _, at_option, at_value, offset in reversed(found):
        if key not in dests:
            continue
        if at_value is None:
            return Word("", "", args[at_option].line, args[at_option].col)
        arg = args[at_value]
        if not offset:
            return Word(arg.raw, arg.value, arg.line, arg.col, arg.node)
        raw = arg.raw.split("=", 1)[1] if "=" in arg.raw and offset > 2 else arg.raw[offset:]
        value = arg.value[offset:] if arg.value is not None else None
        return Word(raw, value, arg.line, arg.col + offset, arg.node)
    return None


def hidden_option(shell, command, *names: str):
    """An option torchrun's own words do not show but an expansion among them holds (`torchrun "${ARGS[@]}"` with
    ARGS=(--nnodes=2 ...), read through base.srun_option's arrays), where one stands where an option may; None
    where every option is in plain sight (the training script's own words are then not read: a review's probe)."""
    from validator.rules.base import srun_option

    texts = [a.value if a.value is not None else a.raw for a in command.args]
    if not _scan(texts, start_of(command))[1]:
        return None
    return srun_option(shell, command, *names)


# torchrun's options from the environment: argparse_util.env reads PET_{DEST} (PET_NNODES, PET_MASTER_PORT) for each
# option (torch/distributed/argparse_util.py at torch 2.13.0); `PET_NNODES`, not `SNIPPET_DIR`
_PET = re.compile(r"(?<![A-Za-z0-9_])PET_[A-Z_]+")


def pet_named(shell) -> bool:
    """A line of the script's code (not a comment line) names a PET_ variable (an assignment,
    `--export=...,PET_NNODES=2`, a command's own `PET_NNODES=2 srun ...`): torchrun's options may come from the
    environment, unseen on its command line; read once per script."""
    def find() -> bool:
        text = shell.root.text.decode("utf-8", "replace") if shell.root is not None else ""
        return any(_PET.search(line) for line in text.splitlines() if not line.lstrip().startswith("#"))
    return shell.once("PET named", find)
