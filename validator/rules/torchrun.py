"""How torchrun reads its command line, shared by the launch rules: which words are torchrun's own options
(and their values) and which word is the training script.

torchrun's parser is get_args_parser() in torch/distributed/run.py (torch 2.13.0, as installed here;
`python -m torch.distributed.launch` uses the same parser and run()). argparse's allow_abbrev takes any
prefix that exactly one option string starts with (`--nn` is --nnodes; `--rdzv` and `--master` match
several and torchrun stops with "ambiguous option"), a value after '=' or in the next word; the first
word that is no option and no option's value is the training script, and the words after it are the
script's own (torchrun never reads them).
"""
from __future__ import annotations

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
SHORT_WITH_VALUE = frozenset({"-r", "-t"})  # --redirects, --tee
AMBIGUOUS = "?"  # the key under which a prefix that matches several options is kept (torchrun refuses the line)


class TorchrunLine(NamedTuple):
    options: dict  # dest ("nnodes", "rdzv_backend", "standalone") -> its last value ("" for a flag)
    unseen: bool  # an expansion stands where an option may (`torchrun $ARGS train.py`): options the text hides
    script: int  # index of the training script (or of -m's module) in the words; len(words) when none


def resolve(name: str) -> str | None:
    """The option string argparse takes `name` for (`--nn` -> --nnodes), AMBIGUOUS when several start with it,
    None when none does (a word torchrun refuses, or the script's own)."""
    if name in OPTIONS:
        return name
    found = [option for option in OPTIONS if option.startswith(name)] if name.startswith("--") and len(name) > 2 \
        else []
    return found[0] if len(found) == 1 else (AMBIGUOUS if found else None)


def dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def read(words: list[str], start: int) -> TorchrunLine:
    """torchrun's options in words[start:], words[start - 1] being torchrun (or the launcher module's name)."""
    options: dict = {}
    unseen = False
    k = start
    while k < len(words):
        word = words[k]
        if word.lstrip("\"'").startswith(("$", "`")):
            unseen = True  # `$DISTRIBUTED_ARGS`, "$@", $(cat args): any option, or the script itself
            k += 1
            continue
        if word == "--":  # argparse's end of options: the training script follows
            k += 1
            break
        if word in ("-m", "--module") or not word.startswith("-") or word.endswith((".py", ".sh")):
            break  # the training script, or -m and the module it runs
        name, has_value, value = word.partition("=")
        if name in SHORT_WITH_VALUE or name in ("-h",):
            option = name
        else:
            option = resolve(name)
        if option is None:
            k += 1  # torchrun refuses a word it does not know; read on (the safe side)
            continue
        takes_value = option not in FLAGS and option != AMBIGUOUS
        if takes_value and not has_value:
            value = words[k + 1] if k + 1 < len(words) else ""
            k += 1
        options[AMBIGUOUS if option == AMBIGUOUS else dest(option)] = value if takes_value or has_value else ""
        k += 1
    return TorchrunLine(options, unseen, k)


def start_of(command) -> int:
    """Where torchrun's own words begin in a launcher command's arguments: after `-m torch.distributed.run`."""
    return 2 if [a.value for a in command.args[:1]] == ["-m"] else 0


def option(command, *dests: str):
    """The Word that gives a launcher command (base.is_launcher: torchrun, `python -m torch.distributed.run`) the
    option of one of `dests` ("nnodes", "nproc_per_node", "standalone"), as its parser reads it: the last one given
    wins (argparse's store), a flag gives a Word whose value is ''; None where none is given among torchrun's own
    words (the training script's words are not torchrun's)."""
    from validator.shell import Word

    args = command.args
    texts = [a.value if a.value is not None else a.raw for a in args]
    found = None
    k = start_of(command)
    while k < len(args):
        text = texts[k]
        if text.lstrip("\"'").startswith(("$", "`")):
            k += 1
            continue
        if text in ("--", "-m", "--module") or not text.startswith("-") or text.endswith((".py", ".sh")):
            break  # argparse's end of options, the training script, or -m and the module it runs
        name, has_value, _ = text.partition("=")
        resolved = name if name in SHORT_WITH_VALUE or name == "-h" else resolve(name)
        if resolved is None:
            k += 1
            continue
        takes_value = resolved not in FLAGS and resolved != AMBIGUOUS
        arg = args[k]
        if has_value:
            raw = arg.raw.split("=", 1)[1] if "=" in arg.raw else ""
            value = text[len(name) + 1:] if arg.value is not None else None
            word = Word(raw, value, arg.line, arg.col + len(name) + 1, arg.node)
        elif takes_value and k + 1 < len(args):
            k += 1
            word = Word(args[k].raw, args[k].value, args[k].line, args[k].col, args[k].node)
        else:
            word = Word("", "", arg.line, arg.col)
        if resolved != AMBIGUOUS and dest(resolved) in dests:
            found = word
        k += 1
    return found
