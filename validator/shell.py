"""A bash syntax tree (tree-sitter's bash grammar) reduced to what the launch rules need.

- commands: every simple command, wherever it sits (functions, ifs, pipelines, substitutions),
  with its arguments as words that know their literal value (when they have one) and position;
- assignments: `X=...`, `export X=...`, `declare/local X=...`, with the literal value, the default
  of a `${X:-default}` value, and whether the assignment is conditional (inside if/case/&&/||);
- expansions: every `$X` / `${X...}` that bash performs in this shell, with its position. Text in
  single quotes, after a backslash or in a quoted heredoc is not expanded here, so it is absent.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_CONDITIONAL = {"if_statement", "case_statement", "elif_clause", "else_clause", "while_statement",
                "for_statement", "c_style_for_statement"}
# Syntax-tree levels the rules look into (a script's own nesting is a few dozen: `$(` costs about
# four); deeper input is an input-too-complex finding instead of quadratic work.
MAX_DEPTH = 400
_DEFAULT = re.compile(r"^\$\{(\w+):?[-=]([^}]*)\}$")
# Commands that run another command: `time srun ...` is an srun for every rule.
WRAPPERS = {"time", "timeout", "exec", "nohup", "command", "env", "numactl", "stdbuf", "nice", "taskset"}
# Their options that take the next word as a value (time(1), timeout(1), env(1), nice(1), stdbuf(1),
# numactl(8), GNU coreutils and numactl's man pages): `timeout -s KILL 10m srun`, `env -u FOO srun`
WRAPPER_VALUED = {"time": {"-o", "-f", "--output", "--format"}, "timeout": {"-s", "--signal", "-k", "--kill-after"},
                   "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}, "nice": {"-n", "--adjustment"},
                   "stdbuf": {"-i", "-o", "-e"}, "numactl": {"-C", "-N", "-m", "-p", "-i", "--physcpubind",
                                                            "--cpunodebind", "--membind", "--preferred", "--interleave"},
                   "exec": {"-a"}}


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass
class Word:
    raw: str
    value: str | None  # the literal value after quote removal, or None when it expands something
    line: int
    col: int
    node: object = field(repr=False, default=None)


@dataclass
class Command:
    name: str
    args: list[Word]
    line: int
    col: int
    in_pipeline: bool
    conditional: bool
    node: object = field(repr=False, default=None)

    def option(self, *names: str) -> Word | None:
        """The value of `--name=value`, `--name value` or `-Xvalue`; a Word with value '' for a flag."""
        for i, arg in enumerate(self.args):
            text = arg.value if arg.value is not None else arg.raw
            for name in names:
                if name.startswith("--"):
                    if text == name:
                        if i + 1 < len(self.args):
                            nxt = self.args[i + 1]
                            return Word(nxt.raw, nxt.value, nxt.line, nxt.col, nxt.node)
                        return Word("", "", arg.line, arg.col)
                    if text.startswith(name + "="):
                        raw = arg.raw.split("=", 1)[1] if "=" in arg.raw else ""
                        value = text[len(name) + 1:] if arg.value is not None else None
                        return Word(raw, value, arg.line, arg.col + len(name) + 1, arg.node)
                elif text.startswith(name) and len(name) == 2:
                    rest = text[2:]
                    if rest:
                        return Word(rest, rest if arg.value is not None else None, arg.line, arg.col + 2, arg.node)
                    if i + 1 < len(self.args):
                        nxt = self.args[i + 1]
                        return Word(nxt.raw, nxt.value, nxt.line, nxt.col, nxt.node)
                    # a short flag that ends the words (`srun -K` cut before its program): set, as `--name` is
                    return Word("", "", arg.line, arg.col)
        return None

    def has_flag(self, *names: str) -> bool:
        return self.option(*names) is not None


@dataclass
class Assignment:
    name: str
    raw: str
    value: str | None  # literal value, or for `${NAME:-default}` the literal default
    line: int
    col: int
    exported: bool
    conditional: bool
    node: object = field(repr=False, default=None)


@dataclass
class Expansion:
    name: str
    line: int
    col: int
    node: object = field(repr=False, default=None)


@dataclass
class ShellScript:
    commands: list[Command] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    expansions: list[Expansion] = field(default_factory=list)
    has_errors: bool = False
    # functions the script exports to the programs it starts (`export -f run_node`, `declare -fx run_node`)
    exported_functions: set = field(default_factory=set)
    unsets: list = field(default_factory=list)  # (name, line, col, node) of each variable an `unset` removes, in order
    too_deep: bool = False  # nested beyond MAX_DEPTH syntax-tree levels: the rules did not look deeper
    root: object = field(repr=False, default=None)  # the tree-sitter root, for rules that need more
    columns: object = field(repr=False, default=None)  # byte to character columns of this text
    # indexes that rules derive from this script, built on first use: a scan per step or per
    # expansion made rules quadratic in the script's length (a 10,000-step script: bench/)
    derived: dict = field(repr=False, default_factory=dict, compare=False)

    def once(self, key: str, build):
        """The index named `key`, built by `build()` the first time any rule asks for it."""
        if key not in self.derived:
            self.derived[key] = build()
        return self.derived[key]

    def array_words(self) -> list[Word]:
        """Literal words inside array assignments (args=(...), args+=(...))."""
        global _pos
        out, stack = [], [self.root] if self.root is not None else []
        saved, _pos = _pos, self.columns
        try:
            while stack:
                node = stack.pop()
                if node.type == "array":
                    out.extend(_word(c) for c in node.children if c.type not in ("(", ")", "comment"))
                    continue
                stack.extend(node.children)
        finally:
            _pos = saved
        return sorted(out, key=lambda w: (w.line, w.col))

    def text_lines(self) -> set[int]:
        """Line numbers that begin inside text the script hands to a command rather than runs: heredoc
        bodies, and the lines after the first of a quoted string that spans lines (echo "#!/bin/bash
        #SBATCH ..." > job.sh). Once per script."""
        def build():
            lines, stack = set(), [self.root] if self.root is not None else []
            while stack:
                node = stack.pop()
                if node.type == "heredoc_body":
                    lines.update(range(node.start_point[0] + 1, node.end_point[0] + 2))
                    continue
                if node.type in ("string", "raw_string", "ansi_c_string") and node.end_point[0] > node.start_point[0]:
                    lines.update(range(node.start_point[0] + 2, node.end_point[0] + 2))
                    continue
                stack.extend(node.children)
            return lines
        return self.once("text lines", build)

    def misparsed_lines(self) -> set[int]:
        """Line numbers (1-based) of parts the parser took wrongly, whose strings may be its guesses: inside
        its ERROR nodes, and inside a backquoted command substitution that holds another unescaped one (bash ends
        `...` at the next unescaped backquote; tree-sitter-bash opens a new one there: `S="`date +%Y`"` then
        `d="` printf 3 `"` two lines below made one substitution of the three lines, and the assignment between them
        a string: round 552's LANL miniEM job). A here-document's body stays text. One walk of the tree, once.
        text_lines() keeps them: a `#SBATCH` line there is as often a job file the script writes (taken out of
        text_lines, 113 such lines more in the strict profile); a rule that reads `NAME=` at a line's start takes them
        out itself (launch-unset-variable)."""
        def build():
            lines, bodies, stack = set(), set(), [(self.root, False)] if self.root is not None else []
            while stack:
                node, in_backquotes = stack.pop()
                if node.type == "heredoc_body":
                    bodies.update(range(node.start_point[0] + 1, node.end_point[0] + 2))
                    continue
                backquoted = node.type == "command_substitution" and node.text[:1] == b"`"
                if node.type == "ERROR" or backquoted and in_backquotes:
                    lines.update(range(node.start_point[0] + 1, node.end_point[0] + 2))
                stack.extend((child, in_backquotes or backquoted) for child in node.children)
            return lines - bodies
        return self.once("misparsed lines", build)

    def named(self, *names: str) -> list[Command]:
        return [c for c in self.commands if c.name in names]

    def assigned(self, name: str) -> list[Assignment]:
        """Assignments of one name, from an index built once (a scan per call made rules that ask
        for every expansion quadratic in the script's length)."""
        index = self.derived.get("assignments by name")
        if index is None or index[0] != len(self.assignments):  # rebuilt if the parser added more
            by_name: dict[str, list[Assignment]] = {}
            for a in self.assignments:
                by_name.setdefault(a.name, []).append(a)
            index = self.derived["assignments by name"] = (len(self.assignments), by_name)
        return list(index[1].get(name, ()))


class _Columns:
    """tree-sitter counts columns in bytes; shellcheck and the #SBATCH parser count characters.
    Converts a node's position to a 1-based (line, character column)."""

    def __init__(self, data: bytes):
        self.data = data
        self.ascii = data.isascii()
        self._rows: dict[int, list[int]] = {}  # row -> character column of each byte offset

    def __call__(self, node) -> tuple[int, int]:
        row, byte_col = node.start_point
        if self.ascii or byte_col == 0:
            return row + 1, byte_col + 1
        table = self._rows.get(row)
        if table is None:  # one table per line: decoding the line's prefix per word was quadratic
            start = node.start_byte - byte_col
            end = self.data.find(b"\n", start)
            table = self._rows[row] = _char_columns(self.data[start:end if end >= 0 else len(self.data)])
        return row + 1, table[min(byte_col, len(table) - 1)] + 1


def _char_columns(line: bytes) -> list[int]:
    """For each byte offset of a line (and its end), the number of characters before it: the bytes
    that start a UTF-8 sequence (every byte but the continuation bytes 0x80-0xBF)."""
    out, chars = [], 0
    for byte in line:
        out.append(chars)
        chars += not 0x80 <= byte <= 0xBF
    out.append(chars)
    return out


_pos = _Columns(b"")  # replaced per parse; positions of literal payloads are reported at their start


def literal(node) -> str | None:
    """The value of a word node after quote removal, or None if it expands anything."""
    kind = node.type
    text = node.text.decode("utf-8", "replace")
    if kind in ("word", "number"):
        if "\\" in text:
            return re.sub(r"\\(.)", r"\1", text)
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type != "string_content":
                return None
            parts.append(re.sub(r"\\([$`\"\\])", r"\1", child.text.decode("utf-8", "replace")))
        return "".join(parts)
    if kind == "concatenation":
        parts = []
        for child in node.children:  # a concatenation's parts are words and strings, not concatenations
            part = literal(child) if child.type != "concatenation" else None
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)
    return None


def _word(node) -> Word:
    line, col = _pos(node)
    return Word(node.text.decode("utf-8", "replace"), literal(node), line, col, node)


# at a line's start, not on a continuation line (`srun bash -s \` then `<<'EOF'` feeds srun)
_BARE_HEREDOC = re.compile(rb"(?m)^(?<!\\\n)([ \t]*)(<<-?[ \t]*(['\"]?)[A-Za-z_]\w*\3[ \t]*$)")


def parse_shell_tree(data: bytes):
    """tree-sitter-bash's tree of a text, for a reader that needs only the syntax (model.heredoc_opened_on)."""
    return _parser().parse(data)


def parse_shell(text: str) -> ShellScript:
    global _pos
    data = text.encode("utf-8", "surrogatepass")
    end = len(data.rstrip(b"\n"))
    if end and data[end - 1:end] == b"\\" and len(data) - end <= 1:
        # a file that ends in a backslash (and at most a newline): bash drops the continuation at the
        # end of input (bash 5.2: `printf 'echo a \\'` runs `echo a`); tree-sitter makes it an error
        data = data[:end - 1] + b" " + data[end:]
    tree = _parser().parse(data)
    if tree.root_node.has_error and _BARE_HEREDOC.search(data):
        # `<<README ... README` with no command: bash runs a null command with that heredoc (a block
        # comment, shellcheck's SC2188); tree-sitter-bash makes an error of it and reads the lines of the
        # text as commands. Read it as `:<<README` (one column later on that line only).
        rewritten = _BARE_HEREDOC.sub(rb"\1:\2", data)
        fixed = _parser().parse(rewritten)
        if not fixed.root_node.has_error:
            tree, data = fixed, rewritten
    out = ShellScript(has_errors=tree.root_node.has_error, root=tree.root_node, columns=_Columns(data))
    saved, _pos = _pos, out.columns
    try:
        _walk(tree.root_node, out, data)
    finally:
        _pos = saved
    return out


def _walk(root, out: ShellScript, data: bytes = b""):
    """Every node in document order, with an explicit stack: a deeply nested script (thousands of
    `$(` or `(`) cannot overflow Python's recursion limit."""
    stack = [(root, False, False, 0)]
    while stack:
        node, conditional, in_pipeline, depth = stack.pop()
        if depth > MAX_DEPTH:  # each deeper level would cost the text of all below it: quadratic
            out.too_deep = True
            continue
        later = []  # children to visit, in document order
        kind = node.type
        if kind in _CONDITIONAL:
            conditional = True
        if kind == "list":  # a && b, a || b: the right side runs only sometimes
            conditional = True
        if kind == "pipeline":
            in_pipeline = True
        if kind == "command":
            name_node = node.child_by_field_name("name")
            if name_node is not None:
                args = [_word(c) for c in node.children_by_field_name("argument")]
                line, col = _pos(node)
                name = literal(name_node.children[0]) if name_node.children else None
                command = Command(name or name_node.text.decode("utf-8", "replace"), args, line, col,
                                  in_pipeline, conditional, node)
                out.commands.append(command)
                inner = unwrap(command)
                if inner is not None:
                    out.commands.append(inner)
            # X=1 cmd: scoped to the command, not an assignment of the script; but tree-sitter-bash sometimes takes
            # `IFS=',' arr=(...)` and the NEXT line's command as one command, where bash ends the line's simple
            # command at its newline (round 509's alphafold2 jobs): an assignment a newline (not a continued line)
            # parts from the name is the script's own
            for child in node.children:
                if child.type == "variable_assignment" and name_node is not None \
                        and _newline_between(child, name_node, data):
                    _assignment(child, out, exported=False, conditional=conditional)
            later = [c for c in node.children if c.type != "variable_assignment"]
        elif kind == "declaration_command":
            keyword = node.children[0].type if node.children else ""
            exported, functions = _declaration_exports(node, keyword)
            for child in node.children:
                named = child.type == "variable_name" or child.type == "word" and child.text[:1] not in b"-+"
                if functions and named:  # `export -f my-func` too
                    out.exported_functions.add(child.text.decode("utf-8", "replace"))
                elif child.type == "variable_assignment":
                    _assignment(child, out, exported=exported, conditional=conditional)
                    later.extend(child.children[2:])
                elif child.type == "variable_name" and exported:
                    line, col = _pos(child)
                    out.assignments.append(Assignment(child.text.decode("utf-8", "replace"), "", None, line, col,
                                                      True, conditional, child))
        else:
            if kind == "unset_command":  # `unset NAME ...` (tree-sitter-bash's own node, not a command)
                words = [c for c in node.children if c.type in ("variable_name", "word", "string", "raw_string")]
                # `unset -f NAME` removes a function, not the variable; `unset "NAME"` removes NAME
                if not any(c.text[:1] == b"-" and b"f" in c.text for c in words):
                    out.unsets.extend((c.text.decode("utf-8", "replace").strip("\"'"), *_pos(c), c) for c in words
                                      if c.text[:1] != b"-")
            if kind == "variable_assignment":
                _assignment(node, out, exported=False, conditional=conditional)
            if kind in ("simple_expansion", "expansion"):
                name = _expanded_name(node)
                if name:
                    line, col = _pos(node)
                    out.expansions.append(Expansion(name, line, col, node))
            later = node.children
        stack.extend((child, conditional, in_pipeline, depth + 1) for child in reversed(later))


def _newline_between(before, after, data: bytes) -> bool:
    """A line ends between two nodes of one command, not continued with a backslash."""
    if after.start_point[0] <= before.end_point[0]:
        return False
    gap = data[before.end_byte:after.start_byte]
    return b"\n" in gap.replace(b"\\\n", b"")


def unwrap(command: Command) -> Command | None:
    """The command a wrapper runs (`time srun ...`, `timeout 5m srun ...`, `env A=1 srun ...`).
    One pass over the words with an index, no copies: `time time ... srun` costs its length."""
    if command.name.rsplit("/", 1)[-1] not in WRAPPERS:  # also /usr/bin/time (GNU time)
        return None
    args, wrapper, start, found = command.args, command.name.rsplit("/", 1)[-1], 0, None
    while True:
        skip_duration, word, valued = wrapper == "timeout", None, False
        for i in range(start, len(args)):
            if valued:  # the value of an option that takes one (`-o "$DIR/time.txt"`)
                valued = False
                continue
            text = args[i].value
            if text is None and skip_duration:  # `timeout "$LIMIT" srun ...`: the duration may come from a variable
                skip_duration = False
                continue
            if text is None:
                break
            if wrapper == "command" and re.fullmatch(r"-p?[vV]p?", text):
                return None  # `command -v srun` prints where srun is and runs nothing (bash(1), command builtin)
            if text.startswith("-") or "=" in text:
                valued = text in WRAPPER_VALUED.get(wrapper, ())
                continue
            if skip_duration:
                skip_duration = False
                continue
            if wrapper == "taskset" and re.fullmatch(r"0x[0-9a-fA-F]+|[0-9,-]+", text):
                continue
            word = i
            break
        if word is None:
            break
        found = word
        if args[word].value.rsplit("/", 1)[-1] not in WRAPPERS:  # the wrapped command; a wrapper of a wrapper reads on
            break
        wrapper, start = args[word].value.rsplit("/", 1)[-1], word + 1
    if found is None:
        return None
    arg = args[found]
    return Command(arg.value, args[found + 1:], arg.line, arg.col, command.in_pipeline, command.conditional,
                   command.node)


def _expanded_name(node) -> str | None:
    for child in node.children:
        if child.type in ("variable_name", "special_variable_name"):
            return child.text.decode("utf-8", "replace")
        if child.type == "subscript":
            for grandchild in child.children:
                if grandchild.type == "variable_name":
                    return grandchild.text.decode("utf-8", "replace")
    return None


def _declaration_exports(node, keyword: str) -> tuple[bool, bool]:
    """Whether a declaration exports the variables it names, and whether the functions it names. Variables:
    `export NAME`, but not `export -n` (removes the export attribute) or `export -f` (names functions);
    `declare`/`typeset` with `-x` among the options before the first name (`-x`, `-gx`, `-rx`), and no `+x` among
    them (`declare -x +x A`, `declare +x -x A`), and not with `f`; `local -x` only inside a function (at the top
    level bash refuses it: "local: can only be used in a function", and sets nothing). Functions: `export -f`
    (not with -n), `declare -fx`/`typeset -fx` (no `+x`). Bash reads the options, `-` or `+`, up to the first word
    that is none, or `--` (builtins/declare.def and setattr.def; each case checked with bash 5.2). Inside a function
    `declare -x` without -g is the function's own variable, exported while it runs: counted as exported, as `export`
    there is."""
    on: set = set()
    off: set = set()  # a `+x` anywhere among the options wins over `-x` (`declare +x -x D` exports nothing)
    for child in node.children[1:]:
        text = child.text.decode("utf-8", "replace") if child.type == "word" else ""
        if text == "--" or len(text) < 2 or text[0] not in "-+":
            break
        (on if text[0] == "-" else off).update(text[1:])
    marked = "n" not in on if keyword == "export" else \
        keyword in ("declare", "typeset", "local") and "x" in on and "x" not in off
    if keyword == "local" and not enclosing(node, ("function_definition",)):
        marked = False
    if "f" in on or "F" in on:
        return False, marked and keyword != "local"
    return marked, False


def enclosing(node, kinds):
    """The nearest node of one of `kinds` at or above `node` (None when there is none)."""
    while node is not None and node.type not in kinds:
        node = node.parent
    return node


def _assignment(node, out: ShellScript, exported: bool, conditional: bool):
    name_node = node.child_by_field_name("name")
    value_node = node.child_by_field_name("value")
    if name_node is None:
        return
    raw = value_node.text.decode("utf-8", "replace") if value_node is not None else ""
    value = literal(value_node) if value_node is not None else ""
    # NAME=${NAME:-default} and NAME="${NAME:-default}" (the quotes change nothing in an assignment)
    if value is None and value_node is not None and value_node.type in ("expansion", "string"):
        match = _DEFAULT.match(raw[1:-1] if value_node.type == "string" else raw)
        if match and match.group(1) == name_node.text.decode("utf-8", "replace"):
            value = match.group(2).strip("\"'")
    line, col = _pos(node)
    out.assignments.append(Assignment(name_node.text.decode("utf-8", "replace"), raw, value, line, col, exported,
                                      conditional, node))
