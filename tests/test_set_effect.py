"""base.set_effect against the real bash: for each `set` command, the options bash has on afterwards
($- and SHELLOPTS, printed by an EXIT trap) must be those set_effect computes. A command that turns on
noexec runs no trap; there the script must print nothing after the `set`."""
import shutil
import subprocess

import pytest

from validator.rules.base import SET_OPTIONS, set_effect
from validator.shell import parse_shell

BASH = shutil.which("bash")
# options every non-interactive `bash -c` has on, whatever the command did
_DEFAULTS = {"braceexpand", "hashall", "interactive-comments"}

CASES = ["-e", "-euo pipefail", "-eEuo pipefail", "-errexit", "-oerrexit", "-ex -s", "-e -o pipefailx", "+x", "-x +x",
         "-o onecmd", "-vx", "-- -n", "- -n", "-euxo pipefail", "-eo pipefail -u", "-xo", "-o", "+o", "-r", "-euo",
         "-ueo pipefail", "-o errexit -o nounset", "--x", "-e -- -n", "-ET", "-e +e", "-o pipefail +o pipefail", "-abx",
         "-e -i", "-io", "-ioerrexit", "-o allexport", "-Cf"]
NOEXEC = ["-n", "-o noexec", "-nounset", "-errext -nounset -o pipefail", "-en"]


def _simulated(words: str) -> tuple[set, set]:
    effect = set_effect(parse_shell(f"set {words}\n").named("set")[0])
    names = {name for name, letter in SET_OPTIONS.items() if (letter and letter in effect.on) or name in effect.options_on}
    return set(effect.on) - set("hB"), names - _DEFAULTS


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("words", CASES)
def test_options_after_set_match_bash(words):
    script = f"trap 'echo \"STATE $-|$SHELLOPTS\" >&2' EXIT\nset {words}\n"
    proc = subprocess.run([BASH, "-c", script], capture_output=True, text=True, timeout=30)
    state = [line for line in proc.stderr.splitlines() if line.startswith("STATE ")][-1][len("STATE "):]
    flags, options = state.split("|")
    assert (set(flags) - set("hBc"), set(options.split(":")) - _DEFAULTS) == _simulated(words)


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("words", NOEXEC)
def test_noexec_runs_nothing_after(words):
    proc = subprocess.run([BASH, "-c", f"set {words}\necho after\n"], capture_output=True, text=True, timeout=30)
    assert "after" not in proc.stdout
    assert "n" in _simulated(words)[0]
