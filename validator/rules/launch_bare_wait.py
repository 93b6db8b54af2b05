"""Steps started in the background and collected with a bare `wait`: their exit status is lost (wait returns 0), and a server step that never ends holds the job until its time limit.

Premise: bash's `wait` without arguments returns 0 once every child has ended, whatever their status
(bash(1), wait builtin). Holds for: every Slurm release (no Slurm behaviour involved). The same holds
for work the batch shell itself starts in the background (`python run.py cfg1 & python run.py cfg2 &
wait`: a sweep whose failed runs end COMPLETED; 10 of 10 such findings on read corpora judged true),
but for an interactive server (Jupyter, TensorBoard) meant to run until its user is done; nor is a bare
wait reported in an interactive session (interactive_session: a notebook in the background) whose
background steps are all services (runs_service: the notebook, Dask's scheduler and workers): the wait
keeps them up until the user ends the job (round three hundred and fifty-seven). A step that
only runs a command with nothing to report (sleep, hostname, echo, date: _NOTHING_TO_LOSE; a program asked
only for its `--version`) loses no status worth keeping: such steps alone do not make a bare wait a
finding; nor does a step whose shell's `-c` text ends with one of them and cannot end sooner with another
status (`bash -c "sleep 2; echo done"`, no exit, exec, trap or errexit: a shell's status is its last
command's, bash(1)). A bare wait with no
background work started since the batch shell's previous bare wait has nothing to lose (round
ninety-five: a second `wait` after the first collected every step; a `wait` before the functions that
start the steps are called); in a loop, work started later in the body counts. A previous wait
counts where it surely ran: at the script's top level or in the body of a loop there, not in a
branch, a subshell or a list that may leave it out. Nor is a bare wait reported that collects one
background step (outside loops and functions) where the batch shell then tests the files the step
left behind and exits non-zero when a test fails (checks_results_after in rules/base.py: `[ -f
ocean.output ] || exit 1`): a failed step still fails the job. With two steps or more (a server and
its client) the wait may never return, and the test after it never runs: still reported. A background
step whose PID the script keeps (`PID=$!`) and kills itself (`kill $PID`) before the next bare wait is
a server stopped on purpose: its status is not wanted, and the wait does not hang on it. Work started in
another arm of an `if`/`case` that holds the wait never runs on the same pass as the wait (bash(1): one
arm of a compound command runs), so that wait has nothing of it to collect (round two hundred and
fifteen: MLPerf's run.sub, weak-scaling instances in the background and waited for in the `then` arm,
strong-scaling runs in the foreground and a second `wait` in the `else` arm); not where the `if` sits in
a loop or a function, which may take the other arm on an earlier turn or call.
The default profile reports a bare wait only where its status counts (_status_unheeded): it is
the job's last command (bash(1): a script's status is that of the last command it ran), errexit or an ERR trap
is on, the statement after it reads `$?`, or it is a condition or part of a list; or a background step is a
server the wait may hold until the time limit. Where another command runs after it and reads nothing of it
(`wait` then `echo done`), `wait "$pid"` would lose the same status: the job's state is that later command's
(rounds 472, 480 and 530; judges of read rounds called 22 such findings false and 12 true, the true ones for a
job that ends COMPLETED whatever its steps did, which is the later command's doing). This also covers a wait right
after the one background run it collects in a script that ends with its own `exit 0` (`python run.py &` then
`wait`: a foreground run written long-hand; rounds 501 and 514), once a special case of its own. The strict profile
keeps them all: our presets want every failure to reach the job's state.
"""
import bisect
import re

from validator.rules.base import (LOOPS, WORK_PROGRAMS, always_runs, backgrounded, checks_results_after, enclosing,
                                  errexit_anywhere, function_definitions, interactive_server, set_effect, shell_payload,
                                  ending_kill, sourced, statement_of, trap_signals)
from validator.rules.launch_kill_on_bad_exit import interactive_session, runs_service
from validator.rules.srun import program_words, step_program

ID = "launch-bare-wait"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("Background srun steps or programs collected with a bare 'wait': the job succeeds whatever they did, and a "
               "server step that never exits holds the job until its time limit; wait for each PID and check it.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --nodes=2\nset -euo pipefail\n"
                      "srun -N1 -n1 --kill-on-bad-exit=1 ./a.sh &\nfirst=$!\nsrun -N1 -n1 --kill-on-bad-exit=1 ./b.sh &\n"
                      "second=$!\nwait \"$first\"\nwait \"$second\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --nodes=2\nset -euo pipefail\n"
                     "srun -N1 -n1 --kill-on-bad-exit=1 ./a.sh &\nsrun -N1 -n1 --kill-on-bad-exit=1 ./b.sh &\nwait\n"}


_NOTHING_TO_LOSE = {"sleep", "hostname", "echo", "printf", "true", "date", "uname"}


def _nothing_to_lose(command, shell) -> bool:
    """`srun [options] sleep 5`: the step's program is one whose status says nothing; or a shell
    whose -c text ends with such a command (`srun -n1 bash -c "sleep 2; echo done"`: a shell's status is
    its last command's, bash(1); round two hundred and fifty-five's job-step demo)."""
    if command.name != "srun":
        return False
    program = step_program(command)
    name = (program.value or "").rsplit("/", 1)[-1] if program is not None else ""
    if name in _NOTHING_TO_LOSE or program is not None and _version_query(
            [word.value for word in program_words(command, program)]):
        return True
    found = shell_payload(shell, command, program, name)
    return found is not None and not found.errexit and _ends_with_nothing_to_lose(found.parsed)


def _version_query(arguments: list[str]) -> bool:
    """`python3 --version`: a program asked only for its version prints it and ends (round two hundred and
    sixty-eight's job-step demo, `bash -c "hostname; sleep 12; python3 --version"`): nothing to report either."""
    return arguments == ["--version"]


# Commands that may end the shell with another status, or run code the text does not show
_MAY_END_SOONER = ("exit", "return", "exec", "trap", "eval", "source", ".")


def _ends_with_nothing_to_lose(payload) -> bool:
    """The text's last statement is a plain command of _NOTHING_TO_LOSE (not in a list or a pipeline), and
    nothing in it can end the shell sooner with another status: no exit, return, exec or trap, no code it
    does not show (eval, source, a command named by an expansion: `$CMD`, `$(cat f)`), no `set` that turns
    on errexit (the shell's own -e or -o errexit: base.shell_payload)."""
    root = payload.root
    statements = [c for c in root.children if c.is_named and c.type != "comment"] if root is not None else []
    last = statements[-1] if statements else None
    if last is None or last.type != "command":
        return False
    name = last.child_by_field_name("name")
    arguments = [node.text.decode("utf-8", "replace").strip("'\"") for node in last.children_by_field_name("argument")]
    if name is None or name.text.decode("utf-8", "replace") not in _NOTHING_TO_LOSE and not _version_query(arguments):
        return False
    if payload.named(*_MAY_END_SOONER) or any(not re.fullmatch(r"[\w./+-]+", c.name) for c in payload.commands):
        return False
    return not any("e" in set_effect(c).on for c in payload.named("set"))


def _functions_running_srun(shell) -> set:
    """Names of the script's functions whose body starts an srun step."""
    return {name for name, node in function_definitions(shell) if b"srun" in node.text}


def _work(command) -> bool:
    """A program that does the job's work in the batch shell itself (python, torchrun, mpirun,
    apptainer, julia: WORK_PROGRAMS), by its base name; not an interactive server."""
    return command.name.rsplit("/", 1)[-1] in WORK_PROGRAMS and not interactive_server(command)




def _function_name(node) -> str | None:
    function = enclosing(node, ("function_definition",))
    name = function.child_by_field_name("name") if function is not None else None
    return name.text.decode("utf-8", "replace") if name is not None else None


def _starts(shell, background) -> list[int]:
    """Where background work starts as the batch shell runs: a background command outside any
    function where it stands, one inside a function at each call of that function, followed out of
    the functions that call it (round ninety-five: functions defined above a first bare `wait`,
    called only after it)."""
    starts, calls = [], {}

    def call_sites(function: str, seen: frozenset) -> list[int]:
        if function not in calls:
            found = []
            for call in shell.named(function):
                caller = _function_name(call.node)
                if caller is None:
                    found.append(call.node.start_byte)
                elif caller not in seen:  # recursion: each function once on a path
                    found.extend(call_sites(caller, seen | {caller}))
            calls[function] = found
        return calls[function]
    for command in background:
        function = _function_name(command.node)
        starts.extend([command.node.start_byte] if function is None else call_sites(function, frozenset({function})))
    return sorted(starts)


_EXPANDED = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


def _killed_before_wait(shell, background) -> set:
    """The background steps the script stops itself before the next bare wait: a server the job ends on
    purpose once its work is done (round two hundred and nine: a vLLM server beside GRPO training). Its
    status is not wanted, and the wait after the kill does not hang on it. Only where that surely
    happens (bash(1) 5.2: `$!` is the last background job's PID; `kill` sends SIGTERM by default): the
    step is a statement of the script's top level and no pipeline (`srun ... | tee log &`: $! is tee's);
    the next statement keeps its PID (`PID=$!`, `export PID=$!`; comments between); a `kill ... $PID`
    with a signal srun ends its step on (base.ending_kill) runs at the top level (alone or first in
    `kill ... || true`) after it and before the next bare wait, and PID is not set, read or unset in
    between."""
    waits = sorted(c.node.start_byte for c in shell.named("wait") if not c.args)
    kills = {}
    for kill in shell.named("kill"):
        if kill.node is None or not _top_level(kill.node) or not ending_kill(kill):
            continue
        for arg in kill.args:
            for name in _EXPANDED.findall(arg.raw):
                kills.setdefault(name, []).append(kill.node.start_byte)
    killed = set()
    for step in background:
        statement = statement_of(step.node)
        if step.in_pipeline or statement is None or not always_runs(statement):
            continue
        name, kept_at = _keeps_pid(statement)
        if name is None:
            continue
        # the next bare wait, or where PID is set again, whichever comes first (bisect: linear overall)
        sets, k = _set_at(shell, name), bisect.bisect_right(waits, step.node.start_byte)
        r = bisect.bisect_right(sets, kept_at)
        bounds = ([waits[k]] if k < len(waits) else []) + ([sets[r]] if r < len(sets) else [])
        until = min(bounds, default=None)
        times = sorted(kills.get(name, ()))
        j = bisect.bisect_right(times, kept_at)  # the first kill after it (bisect: linear overall)
        if j < len(times) and (until is None or times[j] < until):
            killed.add(id(step))
    return killed


def _keeps_pid(statement) -> tuple[str | None, int]:
    """(NAME, where) of the statement after `statement` when it is `NAME=$!` or `export NAME=$!` (comments
    between skipped), else (None, 0)."""
    after = statement.next_named_sibling
    while after is not None and after.type == "comment":
        after = after.next_named_sibling
    if after is not None and after.type == "declaration_command":
        after = next((c for c in after.named_children if c.type == "variable_assignment"), None)
    if after is None or after.type != "variable_assignment":
        return None, 0
    value, name = after.child_by_field_name("value"), after.child_by_field_name("name")
    if value is None or name is None or value.text.decode("utf-8", "replace").strip('"') not in ("$!", "${!}"):
        return None, 0
    return name.text.decode("utf-8", "replace"), after.start_byte


def _top_level(node) -> bool:
    """A command that runs whenever the shell gets to it: a statement of the script's top level, or the
    first command of a top-level `a || b` / `a && b` list (`kill "$PID" 2>/dev/null || true`)."""
    statement = statement_of(node)
    if statement is None or not always_runs(statement):
        return False
    while node != statement:
        parent = node.parent
        if parent is None or parent.type == "list" and parent.children[0] != node:
            return False
        node = parent
    return True


def _set_at(shell, name: str) -> list[int]:
    """Where the script sets, reads into or unsets `name` (start bytes, sorted), found once per script."""
    index = shell.once("pid names set", lambda: _index_sets(shell))
    return index.get(name, [])


def _index_sets(shell) -> dict:
    found = {}
    for a in shell.assignments:  # NAME=..., export NAME, declare NAME=... (not `NAME=x cmd`: the command's own)
        if a.node is not None:
            found.setdefault(a.name, []).append(a.node.start_byte)
    for command in shell.named("read", "unset", "readarray", "mapfile", "declare", "local", "typeset"):
        for arg in command.args:
            if arg.value is not None and arg.value.isidentifier() and command.node is not None:
                found.setdefault(arg.value, []).append(command.node.start_byte)
    return {name: sorted(at) for name, at in found.items()}


def _in_other_arms(node, starts: list[int], cache: dict) -> int:
    """How many of the background starts lie in arms of the `if`/`case` statements around `node` that
    run instead of the one holding it, before it: the `then` part, each `elif` body, the `else` of an
    if_statement; each item of a case_statement, an item ending in `;&` or `;;&` joined with the items
    it goes on to. Conditions belong to no arm (an `elif` condition runs before the `else`). Only for
    statements outside loops and functions (a later turn or call may take another arm). Each
    statement's arms and their counts are found once (`cache`), so thousands of arms stay linear."""
    found, child = 0, node
    parent = node.parent
    while parent is not None:
        if parent.type in LOOPS or parent.type == "function_definition":
            return 0
        if parent.type in ("if_statement", "case_statement"):
            if parent.id not in cache:
                arms = _arms(parent)
                before = [0]  # starts in the arms before each arm
                for low, high in arms:
                    before.append(before[-1] + bisect.bisect_left(starts, high) - bisect.bisect_left(starts, low))
                cache[parent.id] = (arms, before)
            arms, before = cache[parent.id]
            k = bisect.bisect_right(arms, (child.start_byte, float("inf"))) - 1
            if k >= 0 and child.end_byte <= arms[k][1]:
                found += before[k]
        child, parent = parent, parent.parent
    return found


def _arms(statement) -> list[tuple[int, int]]:
    """The arms of an if_statement or a case_statement, as sorted byte ranges (_in_other_arms)."""
    if statement.type == "case_statement":
        arms, joined = [], False
        for item in (c for c in statement.named_children if c.type == "case_item"):
            if joined:  # the item before falls through into this one (`;&`), or tests on (`;;&`)
                arms[-1] = (arms[-1][0], item.end_byte)
            else:
                arms.append((item.start_byte, item.end_byte))
            ending = item.children[-1].type if item.children else ""
            joined = ending == ";&"
            if ending == ";;&":  # every later pattern is tested: any later item may run after this one
                arms[-1] = (arms[-1][0], statement.end_byte)
                break
        return arms
    arms, then_start = [], None
    for child in statement.children:
        if child.type == "then" and then_start is None:
            then_start = child.end_byte
        elif child.type in ("elif_clause", "else_clause", "fi"):
            if then_start is not None and not arms:
                arms.append((then_start, child.start_byte))
            if child.type == "elif_clause":  # its body, after its own `then`: the condition is no arm
                body = next((c.end_byte for c in child.children if c.type == "then"), child.end_byte)
                arms.append((body, child.end_byte))
            elif child.type == "else_clause":
                arms.append((child.start_byte, child.end_byte))
    return arms


def _body_waits(shell) -> dict:
    """id of a loop node -> start bytes of the bare waits that are statements of its own body (they run on every turn
    the body runs to its end)."""
    found: dict = {}
    for command in shell.named("wait"):
        parent = command.node.parent if command.node is not None and not command.args else None
        if parent is not None and parent.type == "do_group" and parent.parent is not None:
            found.setdefault(parent.parent.id, []).append(command.node.start_byte)
    return found


def _collected_later_in_body(loop, at: int, starts: list[int], body_waits: dict) -> bool:
    """In a loop, the work that reaches a wait on the next turn is the work started after it in the body; where a bare
    wait of the body's own statements comes after the last of that work, it collects all of it first (round 461's
    pltn_compare sweeps: `wait` after a foreground batch, `... &` in an inner loop, then a second `wait` in the body:
    the first one has nothing left to collect). Work started before the wait on the same turn is counted apart."""
    last_start = bisect.bisect_left(starts, loop.end_byte) - 1
    if last_start < 0 or starts[last_start] < at:
        return False  # no work after the wait in the body: the earlier work is what reaches it (counted apart)
    return any(starts[last_start] < wait < loop.end_byte for wait in body_waits.get(loop.id, ()))


def _busy_calls(shell, background) -> list[int]:
    """Sorted start bytes of the calls of functions that start background work, themselves or through a function
    they call (each name's calls read once: linear in the commands)."""
    calls: dict = {}
    for command in shell.commands:
        if command.node is not None:
            calls.setdefault(command.name, []).append(command)
    busy = {name for c in background if (name := _function_name(c.node)) is not None}
    queue, found = list(busy), []
    while queue:
        for call in calls.get(queue.pop(), ()):
            found.append(call.node.start_byte)
            caller = _function_name(call.node)
            if caller is not None and caller not in busy:
                busy.add(caller)
                queue.append(caller)
    return sorted(found)


def _collected_in_block(node, placed: list[int], busy_calls: list[int]) -> bool:
    """A bare wait of a function's body that an earlier bare wait of the same block precedes, with no background
    command and no call of a function that starts one between them (round 479's SNVcaller: `wait` after four
    callers in the background, then processing in the foreground, then a second `wait`): the first collected all."""
    before = node.prev_named_sibling
    while before is not None and not (before.type == "command" and before.text.strip() == b"wait"):
        before = before.prev_named_sibling
    if before is None:
        return False
    def inside(points):
        return bisect.bisect_left(points, node.start_byte) > bisect.bisect_right(points, before.end_byte)
    return not inside(placed) and not inside(busy_calls)


def _statements(block, blocks: dict) -> tuple[list, list[int]]:
    """A block's statements (comments, `elif` and `else` clauses left out) and their start bytes, listed once."""
    if block.id not in blocks:
        items = [c for c in block.named_children if c.type not in ("comment", "elif_clause", "else_clause")]
        blocks[block.id] = (items, [c.start_byte for c in items])
    return blocks[block.id]


def _statement_after(node, blocks: dict):
    """The statement of the same block that follows `node` (comments skipped), or None."""
    items, starts = _statements(node.parent, blocks)
    k = bisect.bisect_left(starts, node.end_byte)
    return items[k] if k < len(items) else None


# A background program that serves others, or watches, until it is stopped, by its name: a server (`./server`,
# `tritonserver`, `redis-server`, `run_server.py`, `vllm serve`, `trtllm-serve`, uvicorn, gunicorn, etcd, mongod,
# i-PI, ipyparallel's controller and engines, a script that starts a cluster), `ray start --block`, `iperf -s`, a
# monitor that loops (`nvidia-smi -l 5`, `nvidia-smi dmon`, `dcgmi dmon`, `tail -f`, `sleep infinity`): a bare wait
# may hold it until the time limit, whatever reads the wait's status (round 465's i-PI server and its LAMMPS clients,
# a review's probes). Only a word with no file suffix but .py or .sh counts (`logs/server.log` is no server).
_SERVER = re.compile(r"(?i)(^|[\s/])([\w.-]*server|[\w.-]*[-_]serve|serve|i-pi|ipcontroller|ipengine|ipcluster"
                     r"|start[-_]?cluster[\w-]*|uvicorn|gunicorn|etcd|mongod|mysqld|postgres|memcached|nginx)"
                     r"(\.(py|sh))?(\s|$)")
_SERVES = re.compile(r"(?i)\bray\s+start\b.*--block|\biperf3?\b.*\s-s\b|\bnvidia-smi\b.*(\s-l\b|\s--loop|\sdmon\b)"
                     r"|\bdcgmi\s+dmon\b|\btail\s+(-\w*f|--follow)|\bsleep\s+infinity\b")
_NOT_A_SERVER = re.compile(r"(?i)[\w.-]*(ob|pre|de|con|re)server")


def _serves(command) -> str | None:
    """The name of the server or endless monitor the backgrounded command runs (_SERVER, _SERVES), or None: a word
    that is no option (`--server "$HOST"` is a client's), no value of a backend or address option (`--rdzv_backend
    etcd`: torchrun is etcd's client), no folder or word that only ends in "server" (`/models/observer`); nothing
    that only prints (`echo "starting server" &`)."""
    if command.name.rsplit("/", 1)[-1] in _NOTHING_TO_LOSE:
        return None
    text = command.node.text.decode("utf-8", "replace")
    found = _SERVES.search(text)
    if found is not None:
        return found.group(0).split()[0]
    for match in _SERVER.finditer(text):
        word = match.group(2)
        before = text[:match.start(2)].split()
        if word.startswith("-") or _NOT_A_SERVER.fullmatch(word) \
                or before and re.search(r"--[\w-]*(backend|server|host|addr|url|endpoint)", before[-1]):
            continue
        return word
    return None


# Where a statement's status is read by what encloses it: a condition, a list, a pipeline, a negation, a subshell
_READS_STATUS = ("list", "pipeline", "negated_command", "subshell", "command_substitution", "process_substitution")
_CONDITION_OF = {"if_statement": "then", "elif_clause": "then", "while_statement": "do_group"}
_STATEMENT_BLOCKS = ("program", "do_group", "compound_statement", "if_statement", "elif_clause", "else_clause",
                     "case_item")


def _status_unheeded(node, blocks: dict, functions: set, data: bytes) -> bool:
    """Nothing reads the bare wait's status, so `wait "$pid"` would read the same nothing (round 530's UQ_NAMD, round
    480's FFT benchmarks, round 472's dandelion filters: a wait that only lets the work end before the job goes on):
    the job's state is its last command's (bash(1): a script's status is that of the last command it ran; a
    compound command's, that of the last command of its body), and the wait is not that command: another statement
    runs after it at its own level or at a level around it, and that statement does not read `$?` (`rc=$?`, `if [ $?
    -ne 0 ]`, a group or heredoc a few lines down: its first 4 KiB are read), is no bare `exit` or `return` (alone or
    in `{ }`: they pass the wait's status on), and calls no function of the script whose first statement reads `$?`
    or is a bare `exit`/`return` (bash leaves `$?` as it was on entering a function). Nor is the wait a condition, a part of a list, pipeline or negation, or in a
    subshell, or the last statement of a function (its status is the function's: the caller may read it). The
    caller has ruled out errexit, an ERR trap and a server step (a bare wait may hold a server until the time limit,
    whatever reads its status). A wait that is the job's last command keeps its finding: its 0 is the job's state.
    Each block's statements are listed once (`blocks`) and at most 4 KiB of the next statement are read: linear."""
    child = node
    while child.parent is not None:
        parent = child.parent
        if parent.type in _READS_STATUS or parent.type == "function_definition":
            return False
        marker = _CONDITION_OF.get(parent.type)
        if marker is not None and any(c.type == marker and c.start_byte >= child.end_byte for c in parent.children):
            return False  # `if wait; then`, `while wait; do`: the condition reads it
        if parent.type not in _STATEMENT_BLOCKS:
            child = parent  # a wrapper of the statement (`wait 2>/dev/null`)
            continue
        after = _statement_after(child, blocks)
        if after is not None:
            # the next statement's text, its first 4 KiB (a group or heredoc that reads $? a few lines down), from the
            # script's bytes: linear however large that statement is, and byte columns stay bytes
            text = data[after.start_byte:min(after.end_byte, after.start_byte + 4096)].decode("utf-8", "replace")
            first = text.split("\n", 1)[0]
            return not (_READS_LAST_STATUS.search(text) or _PASSES_STATUS.match(first)
                        or first.split()[:1] and first.split()[0] in functions)
        if parent.type == "program":
            return False  # the job's last command: its 0 is the job's state
        # the block ends with it: its status is the enclosing statement's (a loop, an if, a case, a { } group)
        child = parent.parent if parent.type in ("do_group", "elif_clause", "else_clause", "case_item") else parent
        if child is None:
            return False
    return False


_READS_LAST_STATUS = re.compile(r"\$\?|\$\{\?\}|PIPESTATUS")
_PASSES_STATUS = re.compile(r"\s*[{(]?\s*(exit|return)\s*(;\s*[})]?\s*)?($|#)")


def _status_readers(shell, data: bytes) -> set:
    """The script's functions whose first statement reads `$?` or is a bare `exit`/`return` (`check_status() { [ $?
    -ne 0 ] && ...; }`): called right after a wait, they read its status. Each function read once."""
    found = set()
    for name, node in function_definitions(shell):
        body = node.child_by_field_name("body")
        first = next((c for c in (body.named_children if body is not None else []) if c.type != "comment"), None)
        if first is None:
            continue
        text = data[first.start_byte:min(first.end_byte, first.start_byte + 4096)].decode("utf-8", "replace")
        if _READS_LAST_STATUS.search(text) or _PASSES_STATUS.match(text.split("\n", 1)[0]):
            found.add(name)
    return found


def _started_in_subshell(node, lastpipe: bool, waits_inside: dict) -> bool:
    """The command's background job belongs to a subshell, not to the batch shell: the `&` stands inside a part of a
    pipeline (`cat list | while read l; do srun ... & done`: bash runs each part in a subshell; with `shopt -s
    lastpipe` and no job control, as in a batch script, the last part runs in the shell itself), a `( ... )` or a
    `$( ... )` (bash(1), Pipelines, Command Execution Environment). A bare `wait` of the batch shell waits only for
    its own children: it has none of these to collect or lose (round 526's runlist job: `wait "$pid"` could not reach
    them either). A whole pipeline sent to the background (`srun ... | tee log &`) is the shell's own job; a bare
    wait inside that subshell (`cat l | { ... & done; wait; }`) collects them and is read as any (a review's probes);
    ksh93 runs a pipeline's last part in the shell itself."""
    statement = node
    while statement is not None:  # the statement that the `&` sends to the background
        statement = statement_of(statement)
        if statement is None or statement.next_sibling is not None and statement.next_sibling.type == "&":
            break
        statement = statement.parent
    parent = statement.parent if statement is not None else None
    child = statement
    while parent is not None and parent.type not in ("program", "function_definition"):
        container = None
        if parent.type in ("subshell", "command_substitution", "process_substitution"):
            container = parent
        elif parent.type == "pipeline":
            last = [c for c in parent.children if c.is_named][-1:]
            if not (lastpipe and last and last[0] == child):
                container = child
        if container is not None:
            # a bare wait of that subshell's own collects them (and loses their status): the rule reads it as any
            if container.id not in waits_inside:  # once per subshell: linear
                waits_inside[container.id] = _has_bare_wait(container)
            return not waits_inside[container.id]
        child, parent = parent, parent.parent
    return False


def _has_bare_wait(node) -> bool:
    """A bare `wait` stands inside the node (the subshell's own wait: `cat l | { ... & done; wait; }`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "command":
            name = current.child_by_field_name("name")
            if name is not None and name.text == b"wait" and not current.children_by_field_name("argument"):
                return True
        stack.extend(current.children)
    return False


def _errexit_sourced(target) -> bool:
    """A file of the repository that the script sources turns errexit on or sets an ERR trap (`source ./strict.sh`
    holding `set -euo pipefail`: base.sourced reads it)."""
    return any(any("e" in set_effect(c).on for c in other.named("set")) or _err_trap(other)
               for other in sourced(target).shells)


def _err_trap(shell) -> bool:
    """Any ERR trap, whatever its action does (base.trap_signals: by its signal names, not its action's text)."""
    return any((found := trap_signals(c)) is not None and "ERR" in found[1] for c in shell.named("trap"))


def _servers_left(shell) -> bool:
    """Some command sent to the background serves or watches until it is stopped (_serves), and the script does
    not kill it before the next bare wait (_killed_before_wait: a server stopped on purpose, round two hundred and
    nine). Read once per script."""
    def find():
        serving = {id(c): (c, name) for c in shell.commands
                   if c.node is not None and backgrounded(c) and (name := _serves(c)) is not None}
        killed = _killed_before_wait(shell, [c for c, _ in serving.values()]) if serving else set()
        # `pkill -f tritonserver`, `killall redis-server`: stopped by its name
        named = {(a.value or a.raw).rsplit("/", 1)[-1] for k in shell.named("pkill", "killall") for a in k.args}
        return any(key not in killed and name.rsplit("/", 1)[-1] not in named for key, (_, name) in serving.items())
    return shell.once("bare-wait servers left", find)


def check(target):
    shell = target.script.shell
    steps = {"srun"} | _functions_running_srun(shell)
    # ksh93 runs a pipeline's last part in the shell itself (a review's probe with /usr/bin/ksh 93u+m), as bash does
    # with `shopt -s lastpipe` and no job control
    waits_inside: dict = {}
    lastpipe = (target.script.interpreter or "").startswith("ksh") or any(
        c.args and c.args[0].value == "-s" and any(a.value == "lastpipe" for a in c.args[1:])
        for c in shell.named("shopt"))
    background = [c for c in shell.commands if (c.name in steps or _work(c)) and backgrounded(c)
                  and not _nothing_to_lose(c, shell) and not _started_in_subshell(c.node, lastpipe, waits_inside)]
    if interactive_session(shell) and all(runs_service(shell, c) for c in background):
        return  # the wait keeps a session's notebook and its task farm up until its user ends the job
    killed = _killed_before_wait(shell, background) if background else set()
    background = [c for c in background if id(c) not in killed]
    if not background:
        return
    first = min(c.node.start_byte for c in background)
    starts = _starts(shell, background)
    placed = sorted(c.node.start_byte for c in background)  # where each background command stands in the text
    busy_calls = _busy_calls(shell, background)
    previous = -1  # the last bare wait that surely ran: it collected what started before it
    errexit = errexit_anywhere(target.script)
    # the wait's own status may go unread only where no errexit, no ERR trap and no server step can make it count
    # (the strict profile, our presets', keeps it: there every failure is to reach the job's state)
    # an ERR trap by its signal names, any case (bash 5.2 takes `err`), not its action's text
    unheeded = not target.strict and not errexit and not _err_trap(shell) and not _errexit_sourced(target) \
        and not any(runs_service(shell, c) or interactive_server(c) for c in background) \
        and not _servers_left(shell)
    blocks: dict = {}  # each block's statements, listed once (_statements)
    data = shell.root.text if shell.root is not None and unheeded else b""
    functions = _status_readers(shell, data) if unheeded else set()
    body_waits = _body_waits(shell)
    arms: dict = {}  # the arms of each if/case statement, found once
    for command in shell.named("wait"):
        if command.args:
            continue
        at = command.node.start_byte
        checked = False  # one step collected, and the batch shell then tests what it left behind
        if _function_name(command.node) is not None:  # runs wherever it is called: as before
            started = at > first and not _collected_in_block(command.node, placed, busy_calls)
        else:
            # work started since, less what another arm of an if/case around the wait started
            since = bisect.bisect_left(starts, at) - bisect.bisect_right(starts, previous) \
                - _in_other_arms(command.node, starts, arms)
            checked = since == 1 and enclosing(command.node, LOOPS) is None \
                and checks_results_after(shell, command.node.end_byte)
            loop = enclosing(command.node, LOOPS)
            # work started since, counted with bisect (10,000 background steps stay fast); in a loop, work
            # started later in the body runs before it on the next turn
            in_loop = loop is not None and \
                bisect.bisect_left(starts, loop.end_byte) > bisect.bisect_left(starts, loop.start_byte)
            started = since > 0 or in_loop and not _collected_later_in_body(loop, at, starts, body_waits)
            in_body = loop is not None and command.node.parent is not None and command.node.parent.type == "do_group"
            if always_runs(command.node) or in_body and always_runs(loop):
                previous = at  # a wait of the script's top level, or of the body of a top-level loop (run as written)
        if started and not checked and not (unheeded and _status_unheeded(command.node, blocks, functions, data)):
            yield (target.script.display, command.line, command.col,
                   "bare 'wait' after background steps: it returns 0 whatever they did "
                   "(and waits forever for a server step); keep each $! and 'wait \"$pid\"' to get its status")
