"""Command line: `python -m validator [PATH ...]` and `python -m validator rules`."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from validator import sbatch
from validator.engine import Options, UsageError, validate
from validator.findings import InternalFailure
from validator.output import FORMATS, escape
from validator.source import UNREADABLE

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNUSABLE, EXIT_INTERNAL = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m validator",
        description="Validate Slurm smoke-test presets (preset folders, preset.yaml files) or any sbatch script.",
        epilog="Exit codes: 0 clean, 1 findings, 2 unusable input or usage, 3 internal failure. "
               "'python -m validator rules' lists the rules.")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="preset folder, preset.yaml or sbatch script (default: every preset under presets/)")
    p.add_argument("--format", choices=tuple(FORMATS), default="text")
    p.add_argument("--slurm-version", default=None, choices=sbatch.releases(),
                   help="Slurm release whose sbatch options are accepted (default: a preset's slurm.min_version, "
                        "else the repository config's slurm-version, else the newest, "
                        f"{sbatch.releases()[-1]})")
    p.add_argument("--strict", action="store_true",
                   help="the presets' strict profile for every script: all rules, shellcheck's style checks "
                        "and optional checks (default for scripts outside presets: defects and real risks only)")
    p.add_argument("--select", action="append", default=[], metavar="RULE",
                   help="report only these rules (ids, globs like 'sbatch-*' or 'SC2*'; repeatable, comma-separated)")
    p.add_argument("--ignore", action="append", default=[], metavar="RULE", help="do not report these rules")
    p.add_argument("--no-shellcheck", action="store_true", help="skip shellcheck (faster, less thorough)")
    p.add_argument("--summary", action="store_true", help="print a one-line summary on stderr")
    return p


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v for item in values for v in item.split(",") if v)


def _on_signal(signum, frame):
    # Turned into an exception so that every `finally` runs (shellcheck processes are killed).
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rules"]:
        from validator.rules import RULES
        return _emit("".join(f"{rule.id:34} {rule.severity:8} {rule.profile:8} {rule.description}\n" for rule in RULES),
                     EXIT_CLEAN)
    if argv[:1] in (["new-preset"], ["matrix"]):
        from validator.catalog_cli import main as catalog_main
        return catalog_main(argv)
    if argv[:1] == ["plan"]:
        from validator.plan_cli import main as plan_main
        return plan_main(argv[1:])
    args = _parser().parse_args(argv)
    options = Options(release=args.slurm_version, select=_split(args.select), ignore=_split(args.ignore),
                      shellcheck=not args.no_shellcheck, strict=args.strict)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _on_signal)
    try:
        findings = validate(args.paths, options)
    except UsageError as exc:
        print(f"validator: error: {escape(str(exc))}", file=sys.stderr)
        return EXIT_UNUSABLE
    except InternalFailure as exc:
        print(f"validator: internal failure: {escape(str(exc))}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:  # Ctrl-C: shellcheck is already stopped (engine's finally)
        print("validator: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except RecursionError as exc:  # must not happen (every walk is iterative); never a clean run
        print(f"validator: internal failure: input nested too deeply ({exc})", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception as exc:  # a bug in a rule must not look like a clean run
        import traceback
        print(f"validator: internal failure ({type(exc).__name__}: {escape(str(exc))}); please report this with:",
              file=sys.stderr)
        traceback.print_exc(limit=-3)
        return EXIT_INTERNAL
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    from validator.output import render
    if any(f.rule in UNREADABLE for f in findings):
        code = EXIT_UNUSABLE
    else:
        code = EXIT_FINDINGS if findings else EXIT_CLEAN
    code = _emit(render(findings, args.format), code)
    if args.summary:
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        status = "clean" if not findings else ", ".join(f"{n} {s}(s)" for s, n in counts.items() if n)
        print(f"validator: {status} (Slurm {args.slurm_version or 'per input'})", file=sys.stderr)
    return code


def _emit(text: str, code: int) -> int:
    """Write the report; a reader that went away (`| head`) ends the run quietly with the same code."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit: point it at /dev/null.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return code
