"""launch-trap-deferred's premise against the real shells (bash, and dash as sh where installed): a trap
for a signal that comes while the shell waits for a foreground command runs only when that command ends;
while the shell is in `wait`, it runs at once. The signal comes 0.3 s in; the command takes 2 s."""
import os
import shutil
import subprocess

import pytest

# each shell once: sh is often a link to dash
SHELLS = sorted({os.path.realpath(path) for path in map(shutil.which, ("bash", "sh", "dash")) if path})
SCRIPT = """t0=$(date +%s%N)
trap 'echo "trap at $(( ($(date +%s%N) - t0) / 1000000 ))"' USR1
( sleep 0.3; kill -USR1 $$ ) &
{work}
"""


def _trap_ms(shell: str, work: str) -> int:
    out = subprocess.run([shell, "-c", SCRIPT.format(work=work)], capture_output=True, text=True, timeout=20).stdout
    return int(next(line for line in out.splitlines() if line.startswith("trap at ")).split()[-1])


@pytest.mark.skipif(not SHELLS, reason="no POSIX shell installed")
@pytest.mark.parametrize("shell", SHELLS)
def test_a_trap_waits_for_the_foreground_command(shell):
    assert _trap_ms(shell, "sleep 2") >= 2000


@pytest.mark.skipif(not SHELLS, reason="no POSIX shell installed")
@pytest.mark.parametrize("shell", SHELLS)
def test_a_trap_runs_at_once_during_wait(shell):
    assert _trap_ms(shell, "sleep 2 & wait $!") < 1500
