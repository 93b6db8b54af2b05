"""What the validator checks: a preset folder (manifest, script, README) or a lone sbatch script."""
from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from validator import sbatch
from validator.source import Source, read_source
from validator.yamlload import Document, load_yaml

SCRIPT_NAME = "train.sbatch"
MANIFEST_NAME = "preset.yaml"
README_NAME = "README.md"

# "template", "templates", "templ", "tmpl", "tpl" as a part of a file or folder name, between non-letters
_TEMPLATE_WORD = re.compile(r"(?<![a-z])(?:templates?|templ|tmpl|tpl)(?![a-z])", re.IGNORECASE)

# `# validator: spank=pyxis` declares a SPANK plugin for a script that has no manifest.
_SPANK_DECL = re.compile(r"#\s*validator:\s*spank=([a-z0-9,]+)")


# A '#!' line below line 1 of a file whose line 1 has none: a record that carries a job script after
# its own header (a database of job scripts: metadata lines, a marker, then '#!/bin/bash' and its
# #SBATCH lines), or a generator's heredoc. The job script is the part from that line on.
_LATER_SHEBANG = re.compile(r"^#!\s*/", re.M)
# A first line that meant to be a '#!' line (`!/bin/bash`, `.#!/bin/bash`, `#/usr/bin/env bash`): a job that lost it
_MANGLED_SHEBANG = re.compile(r"^\W{0,3}!?\s*/(?:usr/)?bin/|^#\s*/|^!|\benv\s+(?:ba)?sh\b")
_PAGE_OF_COMMANDS = 10  # command lines above the first #SBATCH line that make a file without '#!' a text
# Where a text's quotation of a script ends: a Markdown fence, or a rule of three or more '=' or '-'.
_QUOTATION_END = re.compile(r"^\s*(```|~~~|={3,}\s*$|-{3,}\s*$)")
# a line at the script's top level that may end the shell: `exit`, `exit 0`, `exec julia ... "$0"` (Script.shell_text)
# indented too: the `exit` of a polyglot's `#=` ... `=#` block is at the top level however it is indented (round 510)
_MAY_END_SHELL = re.compile(r"^[ \t]*(exit|exec)\b.*\n(?=(.*\n)*?[ \t]*[^#\s])", re.M)
class Heredoc(NamedTuple):
    """A here-document that a line opens, as bash reads it (bash(1), "Here Documents", bash 5.2): the
    delimiter is the word after quote removal; a word with any part quoted (`'EOF'`, `E"OF"`, `\\EOF`)
    leaves the body unexpanded, else the writing shell expands `$NAME` and backquotes in it."""
    delimiter: str
    expanded: bool
    end_line: int | None  # the delimiter's line (1-based), None where it never comes
    command_follows: bool  # more of the command after the word on its line (`| sbatch`, `> job.sh`), not a comment
    reader: str  # the command that reads the body (`sbatch <<EOF`: sbatch; `cat > job.sh <<EOF`: cat)


def _heredoc_delimiter(node) -> tuple[str, str, bool] | None:
    """(the word after `<<` as written, the delimiter line bash waits for, whether leading tabs are
    stripped) of a heredoc_redirect node: quotes and backslashes removed ($'EOF' is quoted too), and
    `<<-` strips leading tabs (bash(1), Here Documents). None without a word."""
    opener = next((c for c in node.children if c.type == "heredoc_start"), None)
    if opener is None:
        return None
    word = opener.text.decode("utf-8", "replace")
    delimiter = re.sub(r"[\"'\\]", "", word[1:] if word[:2] in ("$'", '$"') else word)
    return word, delimiter, any(c.type == "<<-" for c in node.children)


def _heredoc_spans(lines: list[str], start: int, stop: int) -> dict[int, int]:
    """{index of a line that opens a here-document: index of the line after its delimiter} for the
    lines[start:stop], from one parse (tree-sitter-bash). The delimiter's line is found as
    heredoc_opened_on finds it (quotes removed, tabs stripped for `<<-`): tree-sitter places the end of
    a partly quoted word (`<<E"OF"`) at the end of the input. A here-document whose delimiter never
    comes is left out."""
    from validator.shell import parse_shell_tree

    if not any("<<" in line for line in lines[start:stop]):
        return {}
    data = "\n".join(lines[start:stop]).encode("utf-8", "surrogatepass")
    where: dict[str, list[int]] = {}  # a line's text (and without leading tabs): the indexes that hold it
    for index in range(start, stop):
        where.setdefault(lines[index], []).append(index)
        if lines[index].startswith("\t"):
            where.setdefault("\t" + lines[index].lstrip("\t"), []).append(index)
    spans: dict[int, int] = {}
    stack = [parse_shell_tree(data).root_node]
    while stack:
        node = stack.pop()
        if node.type != "heredoc_redirect":
            stack.extend(node.children)
            continue
        opener = _heredoc_delimiter(node)
        if opener is None:
            continue
        _word, delimiter, tabs = opener
        opened = start + node.start_point[0]
        found = [held[place] for held in (where.get(delimiter, []), where.get("\t" + delimiter, []) if tabs else [])
                 for place in (bisect.bisect_right(held, opened),) if place < len(held)]
        if found:
            spans[opened] = max(spans.get(opened, 0), min(found) + 1)
    return spans


def heredoc_opened_on(lines: list[str], number: int) -> Heredoc | None:
    """The first here-document that line `number` (1-based) opens, read by tree-sitter-bash from that
    line on: a `<<` in a comment, a string or an arithmetic shift (`$(( 1 << 4 ))`) opens none."""
    from validator.shell import parse_shell_tree

    if not 0 < number <= len(lines) or "<<" not in lines[number - 1]:
        return None
    data = "\n".join(lines[number - 1:]).encode("utf-8", "surrogatepass")
    stack = [parse_shell_tree(data).root_node]
    while stack:
        node = stack.pop()
        if node.start_point[0] > 0:
            continue
        if node.type != "heredoc_redirect":
            stack.extend(reversed(node.children))
            continue
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is None:
            return None
        word, delimiter, tabs = _heredoc_delimiter(node)
        # the delimiter's line found here: tree-sitter-bash's heredoc_end misplaces it after a partly
        # quoted word (E"OF")
        end = next((i + 1 for i in range(number, len(lines))
                    if (lines[i].lstrip("\t") if tabs else lines[i]) == delimiter), None)
        rest = data.split(b"\n", 1)[0][start.end_point[1]:].decode("utf-8", "replace").strip()
        body = node.parent.child_by_field_name("body") if node.parent is not None else None
        name = body.child_by_field_name("name") if body is not None and body.type == "command" else None
        reader = name.text.decode("utf-8", "replace").rsplit("/", 1)[-1] if name is not None else ""
        return Heredoc(delimiter, word == delimiter, end, bool(rest) and not rest.startswith("#"), reader)
    return None


# A word of prose ("program,", "individually."; "C++" is none); a list item's marker ("1)", "-", "*").
_PROSE_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*[,.:;!?]?")
_LIST_MARKER = re.compile(r"([0-9]{1,2}[.)]|[-*])")
# Characters that make a line shell: an expansion, a pipe or redirection, an assignment, a separator.
_SHELL_CHARS = frozenset("$|<>=`;&{}\\")


def is_prose(line: str) -> bool:
    """A sentence of a README, a notes file or a report: four or more words, nearly all of them
    words of a language (no paths, options or expansions), the first capitalised, ending as a
    sentence or a lead-in ends (. : ! ?), and no shell character; or Markdown's bold text. Commands
    do not look like this: their first word is a program name in lower case ("module load ...",
    "srun ./a.out") and their other words options and paths."""
    text = line.strip()
    if text.startswith("**"):
        return True
    if not text or text.startswith("#") or any(ch in _SHELL_CHARS for ch in text):
        return False
    words = text.split()
    if _LIST_MARKER.fullmatch(words[0]):
        words = words[1:]
    if len(words) < 4 or not words[0][:1].isupper() or text[-1] not in ".:!?":
        return False
    return sum(bool(_PROSE_WORD.fullmatch(w)) for w in words) >= 0.8 * len(words)
# Shells whose language shellcheck and the shell rules read (bash's grammar, tree-sitter-bash):
# slurmstepd execve()s the spool copy of the script itself (step->argv[0] = the script, mgr.c; execve
# in task.c, slurm-26-05-3-1), so the kernel runs the interpreter its '#!' names: a tcsh or Python
# batch script is another language with #SBATCH lines on top.
POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ksh", "ksh93", "mksh", "ash", "busybox"})
# Other shells: their control flow is not bash's (tcsh's `if ( ) then ... endif`, foreach), so
# shellcheck, which reads them as bash, reports their syntax as errors; their simple commands
# (`srun -n 8 ./a.out`) read the same, so the rules about steps still apply.
OTHER_SHELLS = frozenset({"csh", "tcsh", "zsh", "fish"})


def _prose_above(lines: list[str]) -> bool:
    """Prose, a Markdown fence or a rule above a quoted job: a text (notes that quote `sbatch <<EOF`),
    not shell code that writes a job."""
    return any(is_prose(line) or _QUOTATION_END.match(line) for line in lines)


def _code_writes_job(lines: list[str], number: int) -> bool:
    """Line `number` (1-based, just above a job's first line) opens a here-document and the command ends
    there (`cat > $1.sh <<%EOF%`, `sbatch <<'EOF'  # submit`), not under prose (notes that quote `sbatch
    <<EOF`): shell code that writes the job (round one hundred and twenty-five's `make_run_file`), and
    the file is that code. With more of the command after the word (`cat << EOF | sbatch`), or where
    sbatch itself reads the body (`sbatch <<'EOF'`), the body is the job, read as one
    (Script.embedding_heredoc)."""
    heredoc = heredoc_opened_on(lines, number)
    return heredoc is not None and not heredoc.command_follows and heredoc.reader != "sbatch" \
        and not _prose_above(lines[:number])


def _exec_runs(first) -> bool:
    """`exec PROGRAM ...` replaces the shell: its first argument a literal word, not a redirection's file-descriptor
    name (`exec {lock}>file`, `exec {BASH_XTRACEFD}>>log`: bash goes on) and not an expansion that may be empty
    (`exec "$@"` with no arguments goes on too). `exit` with two words or more prints "too many arguments" and
    goes on (bash 5.2), so only `exit` and `exit N` count."""
    text = first.text.decode("utf-8", "replace")
    return first.type == "word" and re.fullmatch(r"\{\w+\}", text) is None and "$" not in text


def _opens_string(lines: list[str], number: int) -> bool:
    """Line `number` (1-based, just above a job's first line) is shell code that opens a quoted string it does not
    close (`echo '#!/bin/bash` ... `angsd ...' > zz8`, round 471's GWAS notes), not under prose: the #SBATCH lines
    are text the code writes, and the file is that code."""
    line = lines[number - 1]
    if line.lstrip().startswith("#") or _prose_above(lines[:number]):
        return False
    quote, at = "", 0  # bash's quoting: no escapes inside '...', a backslash escapes inside "..." and outside
    while at < len(line):
        ch = line[at]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            at += 1
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (at == 0 or line[at - 1] in " \t;|&("):
            break  # a comment: its quotes are text (`# the 12" build`)
        at += 1
    return quote != ""


def interpreter(first_line: str) -> str | None:
    """The program a '#!' line runs: `#!/bin/tcsh -f` -> tcsh, `#!/usr/bin/env -S bash -l` -> bash."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return words[0].rsplit("/", 1)[-1] if words else None


def interpreter_flags(first_line: str) -> set[str]:
    """The one-letter options a '#!' line gives its shell: `#!/bin/bash -e` -> {'e'} (errexit from the
    start, as `set -e`). Linux hands everything after the interpreter's path to it as ONE argument
    (fs/binfmt_script.c: i_arg is the rest of the line), so only a single word is a flag word there;
    `env -S` splits the words itself."""
    if not first_line.startswith("#!"):
        return set()
    words = first_line[2:].split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        if not any(w == "-S" or w.startswith("-S") for w in words[1:2]):
            return set()
        words = [w for w in words[2:] if "=" not in w]
        rest = words[1:]
    else:
        rest = words[1:] if len(words) == 2 else []
    return {ch for w in rest if re.fullmatch(r"-[A-Za-z]+", w) for ch in w[1:]}


@dataclass
class Script:
    source: Source
    spank: tuple[str, ...] = ()
    release: str | None = None
    in_preset: bool = False
    # strict profile: undeclared SPANK options are findings; default: known plugins' options pass
    strict: bool = True
    site_options: tuple[str, ...] = ()  # options of a site plugin, declared in the repository config

    @property
    def display(self) -> str:
        return self.source.display

    @cached_property
    def embedded_from(self) -> int:
        """The line where the job script begins. 1 when line 1 is '#!'. A file without '#!' on line 1
        cannot be submitted as it is (sbatch-shebang says so once); its job script is taken to be the
        part from a later '#!' line with #SBATCH lines after it (a record with a header, see
        _LATER_SHEBANG), else from the comment block that holds its first #SBATCH line: what is above
        is not a job's command, so no #SBATCH line is "after a command" because of it."""
        text = self.source.text or ""
        if text.startswith("#!"):
            return 1
        lines = text.split("\n")  # as sbatch's parser numbers them
        found = _LATER_SHEBANG.search(text)
        if found is not None and "\n#SBATCH" in text[found.start():]:
            start = text.count("\n", 0, found.start())
            # a job that shell code writes with a here-document (a generator run with bash, round one
            # hundred and twenty-five: `make_run_file() { cat > $1.sh <<%EOF%`): the file is the code
            return 1 if start > 0 and _code_writes_job(lines, start) else start + 1
        first = next((i for i, line in enumerate(lines) if line.startswith("#SBATCH")), 0)
        while first > 0 and (not lines[first - 1].strip() or lines[first - 1].startswith("#")):
            first -= 1
        return 1 if first > 0 and (_code_writes_job(lines, first) or _opens_string(lines, first)) else first + 1

    @cached_property
    def text(self) -> str:
        """What sbatch's parser and the shell rules read: the job script, the lines above an embedded
        one left blank (line numbers stay the file's). In a file that does not start with '#!', the
        embedded job script ends where a later '#!' line begins another: a text that quotes several
        scripts one after another (a notes file, a log of attempts) holds no single job, and sbatch
        would refuse it as it is (sbatch-shebang); the first script is read, the others are text."""
        if self.embedded_from == 1:
            return self.source.text or ""
        lines = (self.source.text or "").split("\n")
        end = self.embedded_to - 1
        return "\n" * (self.embedded_from - 1) + "\n".join(lines[self.embedded_from - 1:end]) + "\n" * (len(lines) - end)

    @cached_property
    def embedded_to(self) -> int:
        """The line after the job script. In a file that does not start with '#!', the quotation
        that holds the job script ends at a later '#!' line (the next quoted script) or at the
        text's own delimiter (a Markdown fence, a rule of '=' or '-'): bash would run such a line as
        a command, so it is the text's, not the script's; such a line inside a here-document of the job
        is the here-document's. Else one past the last line."""
        lines = (self.source.text or "").split("\n")
        if self.embedded_from == 1:
            return len(lines) + 1
        heredoc = self.embedding_heredoc
        end = heredoc.end_line if heredoc is not None and heredoc.end_line is not None else len(lines) + 1
        # a here-document of the job's own (`cat > task.sh <<'EOF'` with a '#!' line, a '====' banner):
        # its body is the job's text, up to its delimiter's line
        skip = _heredoc_spans(lines, self.embedded_from, end - 1)
        index = self.embedded_from
        while index < end - 1:
            if _LATER_SHEBANG.match(lines[index]) or _QUOTATION_END.match(lines[index]):
                return index + 1
            index = max(index + 1, skip.get(index, 0))
        return end

    @cached_property
    def embedding_heredoc(self) -> Heredoc | None:
        """The here-document whose body is the embedded job script (`cat << EOF | sbatch` on the line
        above its '#!' line: round two hundred and one's generators), or None. The job ends at its
        delimiter's line."""
        if self.embedded_from == 1:
            return None
        return heredoc_opened_on((self.source.text or "").split("\n"), self.embedded_from - 1)

    @property
    def named_template(self) -> bool:
        """The file's name or its folder's says it is a template (`template.sbatch`, `run_sbatch.templ`,
        `job.tmpl`, `run-templates/slurm.sh`): its author's word that a tool fills it in before sbatch
        reads it (rounds two hundred and fifty and fifty-one: srunit's string.Template, qchain.py's
        replace of $JOB_START, gen_job.py's <NODES>)."""
        return self.template_in_file_name or _TEMPLATE_WORD.search(Path(self.source.path).parent.name) is not None

    @property
    def template_in_file_name(self) -> bool:
        """The file's own name says it is a template (`job_adastra_template.ksh`), not only its folder's."""
        return _TEMPLATE_WORD.search(Path(self.source.path).name) is not None

    @property
    def in_rendered_folder(self) -> bool:
        """The file lies under a folder whose name is a template token (`{{cookiecutter.project_slug}}/`):
        a project generator (cookiecutter, copier) renders every file there, and its hooks may rewrite
        them, before anyone submits one; the text here is not what sbatch will read."""
        return any("{{" in part and "}}" in part for part in Path(self.source.path).resolve().parent.parts)

    @property
    def expanded_by_writer(self) -> bool:
        """The job script is the body of an unquoted here-document: the writing shell expands it."""
        return self.embedding_heredoc is not None and self.embedding_heredoc.expanded

    @cached_property
    def quotes_job_text(self) -> bool:
        """A text that quotes a job script or #SBATCH lines, not a job script: line 1 is no '#!' and
        prose, a Markdown fence or a rule of '=' or '-' (a YAML front matter's '---') comes above
        the job script (a README that tells which lines to paste into a script, notes of a
        debugging session, an R Markdown report). Bash would run such a line as a command and
        fail; nobody submits the file: rules about a whole job (its '#!' line, its time limit) have
        nothing to judge (rounds seventeen, eighteen and twenty-three: 10 of 10 such findings judged
        false). Commands, assignments and comments above the #SBATCH lines (a record's header, a
        script that lost its '#!') are no text: those files are still judged as jobs.
        Nor is a file with no '#!' line anywhere (nor a mangled one on line 1: `!/bin/bash`, `.#!/bin/bash`,
        `#/usr/bin/env bash`) whose first #SBATCH line comes after _PAGE_OF_COMMANDS command lines: sbatch would
        refuse it and read none of its directives, and a job's header is at its top; the #SBATCH lines are text of
        a notes file, a library of functions or a walkthrough (rounds 456, 472, 478 and 481: 26 to 304 commands
        above them, four findings of whole-job rules judged false; a script that lost its '#!' has one or two)."""
        text = self.source.text or ""
        if text.startswith("#!"):
            return False
        lines = text.split("\n")
        if not _MANGLED_SHEBANG.search(lines[0]) and not any(line.startswith("#!") for line in lines):
            first = next((n for n, line in enumerate(lines) if line.startswith("#SBATCH")), None)
            commands = sum(1 for line in lines[:first] if line.strip() and not line.lstrip().startswith("#")) \
                if first is not None else 0
            if commands >= _PAGE_OF_COMMANDS:
                return True
        above = lines[:self.embedded_from - 1]
        return any(is_prose(line) or _QUOTATION_END.match(line) for line in above)

    @cached_property
    def shebang(self) -> str:
        """The job script's first line (its '#!' line, where it has one)."""
        lines = self.text.split("\n", self.embedded_from)
        return lines[self.embedded_from - 1] if len(lines) >= self.embedded_from else ""

    @property
    def interpreter(self) -> str | None:
        return interpreter(self.shebang)

    @property
    def interpreter_flags(self) -> set[str]:
        return interpreter_flags(self.shebang)

    @cached_property
    def writes_shell_job(self) -> bool:
        """A program of another language (its '#!' runs no shell: perl, python, Rscript) whose #SBATCH lines all
        come after its own code and a later '#!' line that runs a shell: the text of a job script it writes (a Perl
        here-document, a Python string), not directives of its own; nobody submits the generator (round two
        hundred and seventy-five: somoaf-pipeline's mkslurm.pl writes somoaf_NNN.slurm from `$slurm = <<__EOF`)."""
        if self.interpreter is None or self.shell_language:
            return False
        lines = (self.source.text or "").split("\n")
        first = next((i for i, line in enumerate(lines) if line.startswith("#SBATCH")), None)
        if first is None:
            return False
        above = lines[1:first]
        # a line of the program's code above them: sbatch, which reads directives only until the first line that
        # is neither blank nor a comment, would not read them as this file's (a '#!' line is a comment to it)
        code = any(line.strip() and not line.lstrip().startswith("#") for line in above)
        return code and any(interpreter(line) in POSIX_SHELLS | OTHER_SHELLS for line in above
                            if _LATER_SHEBANG.match(line))

    @property
    def shell_language(self) -> bool:
        """Whether the script is written in a shell (no '#!' line: sbatch refuses it, read as bash);
        a Python or R batch script is not, and no shell rule reads it."""
        return self.interpreter is None or self.interpreter in POSIX_SHELLS | OTHER_SHELLS

    @property
    def shellcheck_reads(self) -> bool:
        """Whether shellcheck reads its language: sh, bash, dash and ksh (its --shell values)."""
        return self.interpreter is None or self.interpreter in POSIX_SHELLS

    @cached_property
    def parsed(self) -> sbatch.SbatchScript:
        declared = set(self.spank)
        for line in (self.source.text or "").split("\n", 200)[:200]:
            m = _SPANK_DECL.search(line)
            if m:
                declared.update(m.group(1).split(","))
        if not self.strict:  # a foreign script: its cluster's plugins are unknown, trust the known ones
            declared.update(sbatch.SPANK_OPTIONS)
        return sbatch.parse_script(self.text, tuple(sorted(declared)), self.release,
                                   self.site_options)

    @cached_property
    def lines(self) -> list[str]:
        """The text's lines, split once (a split per finding was quadratic in the findings)."""
        return (self.source.text or "").splitlines()

    @cached_property
    def shell_ends(self) -> int | None:
        """The line (1-based) of the first command at the script's top level that ends the shell, where lines
        of more than comments follow it: `exit`, or `exec` with a program (`exec julia ... "$0"`; `exec > log`
        only redirects). bash reads and runs a script one command at a time (bash(1), "Shell Grammar": the
        shell reads its input, parses it into commands, executes them), so it never reads what follows, not
        even to find a syntax error: the Julia half of a sh/Julia polyglot job (`#=` ... `exit` ... `=#`,
        round 472's ThreadPinning.jl job), notes kept below an `exit`. A candidate line counts where the text
        up to it parses whole and ends with that command (not inside an `if`, a function, a here-document or
        a continued line); at most three at column 0 and three indented ones are tried (an indented `exit` is
        most often a branch's; round 510's polyglot indents its block), each a parse of the text above it, in
        order. None where none holds."""
        if not self.shell_language:
            return None
        from validator.shell import parse_shell_tree
        # the commands at column 0 first (an indented `exit` is most often a branch's), then the indented ones;
        # at most three of each (each try parses the text above it)
        found_all = list(itertools.islice(_MAY_END_SHELL.finditer(self.text), 200))
        ordered = [f for f in found_all if not f.group(0)[:1].isspace()][:3] + \
            [f for f in found_all if f.group(0)[:1].isspace()][:3]
        for found in sorted(ordered, key=lambda f: f.start()):  # the first that holds is where bash stops
            root = parse_shell_tree(self.text[:found.end()].encode("utf-8", "surrogateescape")).root_node
            last = [child for child in root.children if child.type != "comment"][-1:]
            if root.has_error or not last:
                continue
            command = last[0].child_by_field_name("body") if last[0].type == "redirected_statement" else last[0]
            if command is None or command.type != "command":
                continue
            name = command.child_by_field_name("name")
            word = name.text if name is not None else b""
            arguments = command.children_by_field_name("argument")
            if word == b"exit" and len(arguments) <= 1 or word == b"exec" and arguments and _exec_runs(arguments[0]):
                return self.text.count("\n", 0, found.end())
        return None

    @cached_property
    def shell_text(self) -> str:
        """The text bash runs: Script.text, the lines after the command that ends the shell blank (shell_ends)."""
        if self.shell_ends is None:
            return self.text
        lines = self.text.split("\n")
        return "\n".join(lines[:self.shell_ends]) + "\n" * (len(lines) - self.shell_ends)

    @cached_property
    def shell(self):
        from validator.shell import ShellScript, parse_shell  # tree-sitter is loaded only when a rule needs it
        if not self.shell_language:
            return ShellScript()  # another language (tcsh, Python): nothing in it is bash to read
        return parse_shell(self.shell_text)


@dataclass
class Preset:
    folder: Path
    manifest_source: Source
    document: Document | None
    script: Script | None
    readme: Source | None

    @property
    def manifest(self) -> dict | None:
        """The manifest for rules that need a well-formed one: None unless it loaded without an
        unusable problem and passed the schema (rules never see a type the schema refuses)."""
        if self.document is None or not isinstance(self.document.data, dict):
            return None
        if any(p.unusable for p in self.document.problems) or self.schema_problems:
            return None
        return self.document.data

    @cached_property
    def schema_problems(self) -> list:
        """(line, col, message) for each way the manifest fails the JSON Schema."""
        from validator.schema_check import schema_problems

        return list(schema_problems(self))

    @property
    def display(self) -> str:
        return self.manifest_source.display


@dataclass
class Target:
    """One unit of validation handed to every rule."""
    script: Script | None = None
    preset: Preset | None = None
    repo_root: Path = field(default_factory=Path.cwd)
    release: str = "22.05"
    # no release given (no --slurm-version, no config's, no manifest's): the newest the option table knows is assumed,
    # and a finding whose premise holds only from some release says which
    release_assumed: bool = False
    strict: bool = True  # the strict profile (presets): every rule; else defects and real risks only
    # each file's suppression comments, parsed once when the target is loaded (display -> Suppressions)
    suppressions: dict = field(default_factory=dict)


def manifest_release(manifest) -> str | None:
    """The Slurm release a manifest states (slurm.min_version), as the nearest known release at or below it."""
    slurm = manifest.get("slurm") if isinstance(manifest, dict) else None
    wanted = str(slurm.get("min_version")) if isinstance(slurm, dict) and slurm.get("min_version") else None
    if wanted is None:
        return None
    def key(v):
        return tuple(int(x) for x in v.split(".") if x.isascii() and x.isdigit())  # ASCII only: int("²") raises
    try:
        below = [r for r in sbatch.releases() if key(r) <= key(wanted)]
    except ValueError:
        return None
    return below[-1] if below else sbatch.releases()[0]


def load_preset(folder: Path, root: Path, release: str | None) -> tuple[Preset, list]:
    """A preset; `release` None means the manifest's slurm.min_version (else the oldest release)."""
    problems = []
    manifest_src = read_source(folder / MANIFEST_NAME, root)
    problems += manifest_src.problems
    document = None
    spank: tuple[str, ...] = ()
    if manifest_src.usable:
        document = load_yaml(manifest_src.text, manifest_src.display)
        data = document.data if isinstance(document.data, dict) else {}
        slurm = data.get("slurm") if isinstance(data.get("slurm"), dict) else {}
        declared = slurm.get("spank") if isinstance(slurm.get("spank"), list) else []
        spank = tuple(str(x) for x in declared)
        release = release or manifest_release(data)
    release = release or sbatch.releases()[0]
    script_src = read_source(folder / SCRIPT_NAME, root)
    problems += script_src.problems
    script = Script(script_src, spank, release, in_preset=True) if script_src.usable else None
    readme_path = folder / README_NAME
    readme = read_source(readme_path, root)
    problems += readme.problems
    return Preset(folder, manifest_src, document, script, readme if readme.usable else None), problems


def load_script(path: Path, root: Path, release: str, strict: bool = True, spank: tuple[str, ...] = (),
                site_options: tuple[str, ...] = ()) -> tuple[Script | None, list]:
    src = read_source(path, root)
    script = Script(src, spank, release, strict=strict, site_options=site_options) if src.usable else None
    return script, src.problems
