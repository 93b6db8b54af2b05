"""Discovering targets, running every rule and shellcheck, and filtering the findings."""
from __future__ import annotations

import errno
import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from validator import sbatch
from validator.config import ConfigError, load_config
from validator.findings import Finding
from validator.model import MANIFEST_NAME, SCRIPT_NAME, Target, load_preset, load_script
from validator.shellcheck import ANGLE_TOKEN, PARSE_ERRORS, finding_line, keep_in_default_profile, start_shellcheck
from validator.source import display_path, peek
from validator.suppress import SCRIPT_BREAKS, YAML_BREAKS, parse_suppressions


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


@dataclass
class Options:
    # None: a preset's manifest slurm.min_version, else the repository config's slurm-version,
    # else (a script nobody here wrote) the newest release the option table knows
    release: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    shellcheck: bool = True
    strict: bool = False  # the strict profile for every input, not only presets


def find_root(start: Path) -> Path:
    """The repository the inputs belong to: the nearest folder with presets/ or .git above the path
    as written (links are not followed, so a linked preset folder cannot move the repository), else
    the folder holding the input."""
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        try:
            if (folder / "presets").is_dir() or (folder / ".git").exists():
                return folder
        except OSError:
            continue
    return here if _is_dir(here) else here.parent


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _listing(folder: Path) -> list[Path]:
    """A folder's entries, sorted; raises Unlistable when the folder cannot be read."""
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        raise Unlistable(folder, exc.strerror or str(exc)) from None


def _holds_manifest(folder: Path) -> bool:
    """Whether a folder holds a preset manifest; raises Unlistable when the folder cannot be
    searched (os.path.lexists would say False, and an unreadable preset would pass unseen)."""
    try:
        os.lstat(folder / MANIFEST_NAME)
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return False
        raise Unlistable(folder, exc.strerror or str(exc)) from None


class Unlistable(Exception):
    def __init__(self, path: Path, why: str):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def discover(paths: list[str]) -> list[tuple[str, Path]]:
    """('preset', folder), ('script', file), ('shared', file: a preset repository's scripts/) or
    ('unreadable', folder that cannot be listed)."""
    found: list[tuple[str, Path]] = []
    if not paths:
        presets = Path("presets")
        if not _is_dir(presets):
            raise UsageError("no path given and no presets/ folder here")
        try:
            entries = [p for p in _listing(presets) if not p.name.startswith(".")]
        except Unlistable as exc:
            return [("unreadable", exc.path)]
        folders = [p for p in entries if _is_dir(p)]
        # a link that leads nowhere (dangling, or a loop) where a preset folder would be
        found = [("unreadable", p) for p in entries if os.path.islink(p) and not os.path.exists(p)]
        if not folders:
            raise UsageError("presets/ holds no preset folders")
        found += [("preset", p) for p in folders]
        # The shared in-job scripts are part of every preset: lint them too.
        try:
            found += [("shared", p) for p in shell_scripts_in(Path("scripts"))]
        except Unlistable as exc:
            found.append(("unreadable", exc.path))
        return found
    for raw in paths:
        path = Path(raw)
        try:
            if _is_dir(path):
                if os.path.lexists(path / MANIFEST_NAME) or os.path.lexists(path / SCRIPT_NAME):
                    found.append(("preset", path))
                else:
                    subs, closed = [], []
                    for sub in _listing(path):
                        if _is_dir(sub):
                            try:
                                if _holds_manifest(sub):
                                    subs.append(sub)
                            except Unlistable as exc:  # cannot tell whether it is a preset: say so
                                closed.append(exc.path)
                    if not subs and not closed:
                        raise UsageError(f"{display_path(path)}: folder holds no {MANIFEST_NAME} and no preset folders")
                    found.extend(("preset", p) for p in subs)
                    found.extend(("unreadable", p) for p in closed)
            elif path.name == MANIFEST_NAME:
                found.append(("preset", path.parent))
            elif os.path.lexists(path):
                found.append(("script", path))
            else:
                raise UsageError(f"{display_path(path)}: no such file or folder")
        except Unlistable as exc:
            found.append(("unreadable", exc.path))
    return found


def shell_scripts_in(folder: Path) -> list[Path]:
    """Bash scripts (by shebang or .sh suffix) directly inside a folder."""
    if not _is_dir(folder):
        return []
    root = find_root(folder)
    found = []
    entries = _listing(folder)  # Unlistable goes to the caller: an unreadable scripts/ is reported, not skipped
    for path in entries:
        if _is_dir(path):
            continue
        if path.suffix == ".sh":
            found.append(path)
            continue
        head = peek(path, root)
        if head is not None and head.startswith(b"#!") and b"bash" in head.split(b"\n")[0]:
            found.append(path)
    return found


def _applies(rule, target: Target) -> bool:
    if rule.scope == "any":
        return True
    if rule.scope == "script":
        return target.script is not None
    if rule.scope in ("manifest", "preset"):
        return target.preset is not None
    return False


# Suffixes of other languages' source: such a file without a '#!' line is no batch script, whatever
# #SBATCH example its comments show (sbatch itself refuses a script without '#!': sbatch.c, _get_script_buffer).
OTHER_LANGUAGE = {".jl", ".py", ".r", ".m", ".c", ".cc", ".cpp", ".h", ".hpp", ".f", ".f90", ".go", ".rs", ".js",
                  ".ts", ".java", ".lua", ".rb", ".md", ".rst", ".tex", ".ipynb", ".yaml", ".yml", ".json", ".toml",
                  # documents that quote jobs in source blocks: Emacs Org (#+BEGIN_SRC, round 159), AsciiDoc
                  ".org", ".adoc"}


# make's own files: their recipes pipe whole jobs into sbatch (`printf "#!/bin/bash\n#SBATCH ..." | sbatch`),
# each with its own '#!' line and header; the file itself is make's syntax, never a job (round thirty-nine)
MAKEFILES = {"makefile", "gnumakefile"}
MAKE_SUFFIXES = {".mk", ".mak"}
NOT_SHELL_SUFFIXES = OTHER_LANGUAGE | MAKE_SUFFIXES


def _other_language(path, script) -> bool:
    text = script.source.text or ""
    return ((path.suffix.lower() in NOT_SHELL_SUFFIXES or path.name.lower() in MAKEFILES)
            and not text.startswith("#!"))


def validate(paths: list[str], options: Options) -> list[Finding]:
    check_selectors(options)
    targets: list[Target] = []
    unlisted: list[Finding] = []
    for kind, path in discover(paths):
        if kind == "unreadable":
            why = ("dangling symbolic link (or a link loop)" if os.path.islink(path) and not os.path.exists(path)
                   else "cannot list this folder (permission denied or not readable)")
            unlisted.append(Finding(display_path(path), 1, 1, "error", "input-unreadable", why, unusable=True))
            continue
        root = find_root(path)
        try:
            config = load_config(path if path.is_dir() else path.parent, root)
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        if kind == "preset":
            preset, problems = load_preset(path, root, options.release or config.slurm_version)
            release = preset.script.release if preset.script else (options.release or sbatch.releases()[0])
            target = Target(script=preset.script, preset=preset, repo_root=root, release=release)
        else:
            strict = kind == "shared" or options.strict or config.strict
            given = options.release or config.slurm_version  # else the newest is assumed
            release = given or sbatch.releases()[-1]
            script, problems = load_script(path, root, release, strict, config.spank, config.spank_options)
            if script is not None and _other_language(path, script):
                # said, not a finding: the file is not a batch script, and nothing in it was checked
                kind_of = f"a {path.suffix} file" if path.suffix else f"'{path.name}' (make's)"
                print(f"validator: {script.display}: not checked: {kind_of} without '#!' is source of another "
                      "language (its #SBATCH lines are an example, or jobs it writes)", file=sys.stderr)
                continue
            if script is not None and script.writes_shell_job:
                # said, not a finding: as above, the #SBATCH lines are those of a job the program writes
                print(f"validator: {script.display}: not checked: its '#!' line runs {script.interpreter}, and its "
                      "#SBATCH lines follow a later '#!' line of a shell: a job script that it writes", file=sys.stderr)
                continue
            if script is not None and not script.shell_language:
                print(f"validator: {script.display}: its '#!' line runs {script.interpreter}, not a shell: "
                      "only its #SBATCH lines were checked", file=sys.stderr)
            elif script is not None and not script.shellcheck_reads:
                print(f"validator: {script.display}: its '#!' line runs {script.interpreter}: shellcheck was not "
                      "run (it reads sh, bash, dash and ksh)", file=sys.stderr)
            target = Target(script=script, repo_root=root, release=release, strict=strict, release_assumed=not given)
        if target.preset and target.preset.document:
            problems = problems + target.preset.document.problems
        for source, breaks in _texts(target):
            target.suppressions[source.display] = parse_suppressions(source.text, source.display, breaks)
            problems = problems + target.suppressions[source.display].problems
        target.load_problems = list(problems)
        targets.append(target)

    shell = [t for t in targets if t.script is not None and t.script.shellcheck_reads]
    findings: list[Finding] = list(unlisted)
    pending = []
    quoted = _copies_folder(shell) if options.shellcheck else None
    try:
        read_as = _shellcheck_inputs(shell, quoted.name if quoted is not None else "")
        strict = [read_as[t.script.display] for t in shell if t.strict]
        default = [read_as[t.script.display] for t in shell if not t.strict]
        shown_as = {given: display for display, given in read_as.items()}
        # shellcheck starts first and runs in its own processes while Python loads and runs the rules;
        # the strict profile adds shellcheck's optional checks.
        pending += [start_shellcheck(group, optional=group is strict)
                    for group in (strict, default) if group and options.shellcheck]
        for target in targets:
            findings.extend(_run_rules(target))
        default_paths = {shown_as[given] for given in default}
        by_path = {t.script.display: t.script for t in targets if t.script is not None}
        for collect in pending:
            found = [replace(f, path=shown_as.get(f.path, f.path)) for f in collect()]
            unparsed = {f.path for f in found if f.rule in PARSE_ERRORS}
            codes: dict = {}
            for f in found:
                codes.setdefault(f.path, set()).add((f.rule, f.line))
            findings.extend(f for f in found
                            if (f.path not in default_paths or (keep_in_default_profile(f, by_path.get(f.path),
                                                                                        f.path in unparsed,
                                                                                        frozenset(codes[f.path]))
                                                                and not unrendered_template(f, by_path.get(f.path)))
                                or not silenceable(f))
                            and not _not_the_scripts(f, by_path.get(f.path)))
    finally:
        for run in pending:
            run.stop()  # on every way out (an exception, a signal turned into one): no shellcheck left
        if quoted is not None:
            quoted.cleanup()
    return _filter(findings, targets, options)


def _read_alone(script) -> bool:
    """A job that a text quotes, not the body of a here-document the text shows (`sbatch <<EOF`):
    that body is the writing shell's text, its escaped dollars not yet undone."""
    return script.quotes_job_text and script.embedding_heredoc is None


def _read_copy(script) -> bool:
    """shellcheck reads a copy of the script: a job that a text quotes (_read_alone), or one whose shell ends
    before its last lines of code (Script.shell_ends: bash never reads them; a sh/Julia polyglot's Julia half)."""
    return _read_alone(script) or script.shell_ends is not None


def _copies_folder(shell: list[Target]):
    """A private temporary folder for the quoted jobs' copies, or None: none is quoted, or none of
    $TMPDIR, /tmp, /var/tmp, /usr/tmp takes one (tempfile's last resort, the working directory, may be
    the user's repository: not used); then shellcheck reads those texts whole, as before."""
    if not any(_read_copy(t.script) for t in shell):
        return None
    for folder in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp", "/usr/tmp"):
        if folder and os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            try:
                return tempfile.TemporaryDirectory(prefix="validator-", dir=folder)
            except OSError:
                continue
    return None


def _shellcheck_inputs(shell: list[Target], folder: str) -> dict[str, str]:
    """The file shellcheck reads for each script: the script itself, or, for a job that a text
    quotes (Script.quotes_job_text: a report that pastes it in an R Markdown chunk, a README), a
    copy of the job alone (Script.text: the lines around it blank, so the numbers stay the file's).
    Reading the whole text, shellcheck takes the prose and fences after the quotation for shell and
    reports a parse error inside the job (round two hundred and ninety-five: a ```{bash} chunk of
    an .Rmd report, `Expected a '}'` on the job's last line). A job that shell code around it
    writes (a here-document piped to sbatch) or a record's header above a job are shell: the whole
    file is read, as bash reads it; so is a text that quotes `sbatch <<EOF` (_read_alone). Lines after the
    command that ends the shell are blank in the copy (Script.shell_text)."""
    read_as = {}
    for number, target in enumerate(shell):
        script = target.script
        read_as[script.display] = script.display
        if folder and _read_copy(script):
            copy = os.path.join(folder, f"{number}.sh")
            try:
                with open(copy, "w", encoding="utf-8", errors="surrogateescape") as handle:
                    handle.write(script.shell_text)
            except OSError:
                continue  # a full disk: shellcheck reads the whole text, as before
            read_as[script.display] = copy
    return read_as


def check_selectors(options: Options) -> None:
    """A --select/--ignore pattern that matches no rule is a typo that would hide everything."""
    from validator import rules as registry

    for flag, patterns in (("--select", options.select), ("--ignore", options.ignore)):
        for pattern in patterns:
            if not registry.known(pattern):
                raise UsageError(f"{flag} {pattern!r} matches no rule ('python -m validator rules' lists them; "
                                 "shellcheck codes are SC1000-SC3999)")


def silenceable(finding: Finding) -> bool:
    """Whether a suppression, --select or --ignore may hide a finding: not what made its file unusable,
    nor a rule that says so of itself (SILENCEABLE = False: unreadable input, the schema, suppressions)."""
    from validator import rules as registry

    rule = registry.BY_ID.get(finding.rule)
    return not (finding.unusable or finding.rule.startswith("input-") or (rule is not None and not rule.silenceable))


def _not_the_scripts(finding: Finding, script) -> bool:
    """A shellcheck finding that is about something other than the job script's code, in any profile:
    a `'$VAR'` deferred to the step, a record's header, a template's unrendered placeholder, the
    carriage returns of a CRLF file (said once by sbatch-crlf), the '#!' line of a job that a text
    quotes (_SHEBANG_FORM: nobody submits the report or README, and sbatch-shebang is silent there too)."""
    if script is None:
        return False
    return ((finding.rule == "SC2016" and _deferred_to_step(finding, script)) or _above_embedded_script(finding, script)
            or _placeholder_line(finding, script) or _crlf_parse(finding, script)
            or (finding.rule in _SHEBANG_FORM and script.quotes_job_text)
            or (finding.rule in _BASH_ONLY_SYNTAX and script.interpreter in _KSH))


# shellcheck reads every script as bash (shellcheck._command: --shell=bash); a ksh job runs under ksh93, whose
# grammar takes what bash refuses here: `then ;`, an elif's `then ;`, `else ;`, `do ;` (SC1051, SC1052, SC1053,
# SC1059: ksh 93u+m/1.0.4 runs `if true; then ; echo yes; fi` and the others, bash 5.2 stops with a syntax error;
# round 501's TSMP machine file, 11 findings)
_BASH_ONLY_SYNTAX = frozenset({"SC1051", "SC1052", "SC1053", "SC1059"})
_KSH = frozenset({"ksh", "ksh93"})


# shellcheck's codes about the form and place of the '#!' line (SC1008 unknown interpreter, SC1082 a
# byte-order mark, SC1084 '!#', SC1104 '!/bin', SC1113 '#/bin', SC1114 blanks before it, SC1115 '# !',
# SC1128 not on line 1): in a text that quotes a job nobody submits the text, and the copy shellcheck
# reads has blank lines where the text's prose was.
_SHEBANG_FORM = {"SC1008", "SC1082", "SC1084", "SC1104", "SC1113", "SC1114", "SC1115", "SC1128"}


def _above_embedded_script(finding: Finding, script) -> bool:
    """shellcheck reads the whole file; above an embedded job script is a record's header, not the
    job, and from the next '#!' line on another quoted script (Script.text)."""
    return script is not None and not script.embedded_from <= finding.line < script.embedded_to


# A template engine's placeholder in the body (`osu-{{ osu_version }}/osu_latency`, a tool's
# `[_PY_ADD_SLURM_CMD_]` line): a tool renders the line before bash sees it; shellcheck's reading of
# the braces or brackets is about the unrendered text.
_BODY_PLACEHOLDER = re.compile(r"\{\{\s*[A-Za-z_][^{}\n]{0,200}\}\}|\{%[^\n]{0,200}?%\}|" + sbatch.BRACKET_TOKEN.pattern)


def _placeholder_line(finding: Finding, script) -> bool:
    if script is None or not finding.rule.startswith("SC") or not 0 < finding.line <= len(script.lines):
        return False
    return _BODY_PLACEHOLDER.search(script.lines[finding.line - 1]) is not None


def _crlf_parse(finding: Finding, script) -> bool:
    """A file with DOS line endings: sbatch-crlf says it once (sbatch refuses the file); shellcheck's
    SC1017 on every such line and the parse errors the carriage returns cause (an `if` whose `then\r`
    is no keyword) are that one defect again."""
    return (script is not None and bool(script.parsed.crlf_lines) and finding.rule.startswith("SC1")
            and len(finding.rule) == 6)


# parse errors at an unfilled `<token>` (SC1019: `if [ -d <dir> ]` leaves -d without its argument)
_TEMPLATE_PARSE_ERRORS = PARSE_ERRORS | {"SC1019"}
# a line of the body that is one Jinja expression (`{{ slurm_stage_env or '' }}`): its `{{` opens a brace group that
# bash never sees closed, so shellcheck's parse error lands at the end of the file, not on the line
_TEMPLATE_LINE = re.compile(r"^\s*\{\{\s*[A-Za-z_].*\}\}\s*$")
_UNCLOSED_GROUP = _TEMPLATE_PARSE_ERRORS | {"SC1056"}  # SC1056: "Expected a '}'"
# a Jinja expression, which starts with a name (a %(name)s token alone in the commands is no template; docker's,
# podman's and apptainer's Go format `{{.State.Status}}` is the command's own argument)
_JINJA = re.compile(r"\{\{\s*[A-Za-z_][^{}]*\}\}")


def unrendered_template(finding: Finding, script) -> bool:
    """A default-profile shellcheck finding about a template's unrendered text, not the job's code:
    - any finding in a file with {{ }} placeholders in its directives or Jinja's own lines ({% include %}),
      or under a folder named by a template token (`{{cookiecutter.project_slug}}/`): a tool renders it
      before sbatch; and one on a line of the body that holds a Jinja {{ }} expression, or a parse error in a
      file with a line that is one such expression;
    - a parse error at a `<token>` (`source <source>`, `python <dir>/run.py`) in a file whose directives
      hold a person's placeholders (`#SBATCH --account=<account>`): sbatch-bad-value reports that file
      once as a template to fill in before sbatch ("reported once, for every placeholder line"), and the
      token in the commands is the same unfilled template, not a second defect (round one hundred and
      sixty-two: a package's batch template whose every value and path is a `<token>`). The line, not the
      column: SC1073 points at the construct's start (`if`, `>`), SC1072 past it."""
    if script is None:
        return False
    if script.parsed.template_lines or script.parsed.engine_lines or script.in_rendered_folder:
        return True
    if _JINJA.search(finding_line(finding, script)) or finding.rule in _UNCLOSED_GROUP and any(
            _TEMPLATE_LINE.match(line) for line in script.lines):
        return True  # `{{ slurm_stage_env or '' }}` as a line of the body (round 476's DVC stage job): rendered first
    if finding.rule not in _TEMPLATE_PARSE_ERRORS or not ANGLE_TOKEN.search(finding_line(finding, script)):
        return False
    from validator.rules.sbatch_bad_value import template_placeholder_lines
    return bool(template_placeholder_lines(script.parsed))


def _deferred_to_step(finding: Finding, script) -> bool:
    """SC2016 inside the single-quoted command string of `srun ... bash -c '...'`: the expansion is
    left to the shell on the compute node on purpose."""
    if script is None:
        return False
    from validator.rules.base import with_payloads

    where = (finding.line, finding.col)
    for command, _ in with_payloads(script.shell):
        if command.name not in ("bash", "sh") or command.node is None:
            continue
        payload = command.option("-c")
        node = payload.node if payload is not None else None
        if node is None or not payload.raw.startswith("'") or not _inside_srun(command.node):
            continue
        if (node.start_point[0] + 1, node.start_point[1] + 1) <= where <= (node.end_point[0] + 1, node.end_point[1] + 1):
            return True
    return False


def _inside_srun(node) -> bool:
    name = node.child_by_field_name("name")
    words = [name.text.decode("utf-8", "replace")] if name is not None else []
    words += [c.text.decode("utf-8", "replace") for c in node.children_by_field_name("argument")]
    return any(w.rsplit("/", 1)[-1] == "srun" for w in words)


def _run_rules(target: Target) -> list[Finding]:
    from validator import rules as registry  # imported after shellcheck has started

    out = []
    for rule in registry.RULES:
        if not _applies(rule, target) or (rule.profile == "strict" and not target.strict):
            continue
        for item in rule.check(target):
            out.append(rule.finding(item))
    if not target.strict and target.script is not None and any(f.rule.startswith("launch-") for f in out):
        from validator.rules.base import dead_branch_lines
        dead = dead_branch_lines(target.script.shell)  # a branch that never runs as written (default profile)
        out = [f for f in out if not (f.rule.startswith("launch-") and f.line in dead)]
    return out


def _filter(findings: list[Finding], targets: list[Target], options: Options) -> list[Finding]:
    from validator import rules as registry

    suppressions = {}
    for target in targets:
        for display, parsed in target.suppressions.items():
            suppressions[display] = (parsed.by_line, parsed.whole_file)
    kept = []
    for finding in sorted(set(findings), key=lambda f: (f.path, f.line, f.col, f.severity, f.rule, f.message)):
        if not silenceable(finding):
            kept.append(finding)
            continue
        if options.select and not registry.matches(finding.rule, list(options.select)):
            continue
        if options.ignore and registry.matches(finding.rule, list(options.ignore)):
            continue
        by_line, whole = suppressions.get(finding.path, ({}, set()))
        if finding.rule in whole or finding.rule in by_line.get(finding.line, ()):
            continue
        kept.append(finding)
    return kept


def _texts(target: Target):
    """The readable sources of a target that may carry inline suppressions, with their line breaks
    (a script's lines are bash's and shellcheck's; a manifest's are the YAML reader's)."""
    if target.script is not None:
        yield target.script.source, SCRIPT_BREAKS
    if target.preset is not None and target.preset.manifest_source.usable:
        yield target.preset.manifest_source, YAML_BREAKS
