"""Validator time on one script of 10,000 srun lines (issue 28: rules must be linear in the input).

Four shapes of 10,000 srun lines, each under the 256 KiB size bound: every srun in the foreground, every srun in the
background with a bare `wait` after each hundred, the srun lines inside a function body
(`compound_statement`, which launch-bare-wait walks), and every srun taking its options from an
array (`srun "${ARGS[@]}"`, which launch-kill-on-bad-exit reads through); and "mixed", 10,000 lines
of which 2,000 srun with a `bash -c` payload, eval, a printed secret, an unset near-name and an export; and
"wait-checks", 2,500 background steps each followed by a bare `wait` and a test of its result that exits
(`[ -s out ] || exit 1`); "killed-servers", 5,000 server steps each kept by `P=$!` and killed before a bare
`wait`; "case-arms", one case statement of 5,000 arms, every other one a step in the background and
the rest a step and a bare `wait` (2,500 findings); "quoted-heredocs", a job quoted in a text that writes
a helper with a here-document before each of its 2,000 steps; "lookalikes", 5,000 live `#SBATCH -t1` directives
and 300 `#sbatch` look-alike lines of 100 options each before 1,000 steps (sbatch-lookalike reads the live
values once); "exported-functions", 2,000 functions each run by `srun bash -c NAME`; "node-local-paths", 4,000
/tmp paths from SLURM_PROCID in a job of one task per node; "long-python-c", one `python -c` of 40,000 `$A`
numbers; "python-checks", 2,000 print-only `python - <<'PY'` checks after a training; "conda-activates", 5,000
`conda activate` lines without conda's hook, each before a step; "conda-blank-lines", one activate before 80,000
lines of blanks; "loop-turns", 2,500 loops of a teed step and an echo; "misspelt-directives", 10,000 `#SBACTH`
lines; "timeout-variables", 5,000 steps under `timeout $Ln` with the durations set in the file; "multi-prog",
10,000 --multi-prog steps; "pipeline-background", 10,000 background steps in one pipeline's loop; "unread-per-task",
5,000 per-task values nothing reads; "rank-holders", 5,000 per-task values each handed to a step's --rank.
shellcheck is off (--no-shellcheck): this
times the validator's own parse and rules. Prints the median of RUNS runs (wall seconds) per shape.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINES = 10_000
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
HEAD = "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --nodes=2\nset -euo pipefail\n"


def shapes() -> dict[str, str]:
    foreground = "".join(f"srun -n1 hostname {i}\n" for i in range(LINES))
    background = "".join(f"srun -n1 hostname {i} &\n" + ("wait\n" if i % 100 == 99 else "") for i in range(LINES))
    in_function = "steps() {\n" + "".join(f"  srun -n1 true {i} &\n" for i in range(LINES)) + "  wait\n}\nsteps\n"
    array_args = "A=(-K1 -n2)\n" + "".join(f"srun \"${{A[@]}}\" t{i}\n" for i in range(LINES))
    mixed = "TOKEN=x\n" + "".join(f"V{i}=a\nsrun bash -c 'torchrun --nnodes=2 x.py $SLURM_PROCID' &\neval \"$V{i}\"\n"
                                   f"echo \"$T{i} $TOKEN\"\nexport N{i}=1\n" for i in range(LINES // 5))
    # a bare wait after each step, then a test of its result (launch-bare-wait and launch-strict-mode ask
    # checks_results_after once per wait)
    wait_checks = "".join(f"srun -n2 ./step {i} &\nwait\n[ -s out{i} ] || exit 1\n" for i in range(LINES // 4))
    # a server step kept by its PID and killed before the next bare wait, one name reused (launch-bare-wait
    # finds the first kill after each step with bisect)
    killed = "".join(f"srun ./s{i} &\nP=$!\nsrun ./c{i}\nkill $P\nwait\n" for i in range(LINES // 2))
    # one case of 5,000 arms, half starting a step in the background, half starting one and waiting for it
    # with a bare wait (a finding each); launch-bare-wait finds each statement's arms once and counts the
    # steps of the arms before the wait's from a running sum
    case_arms = "case \"$MODE\" in\n" + "".join(
        f"  a{i}) srun -n2 ./step {i} & ;;\n" if i % 2 else f"  a{i}) srun -n2 ./step {i} &\n    wait ;;\n"
        for i in range(LINES // 2)) + "esac\n"
    # a job that a text quotes (prose and a fence above its '#!' line), writing a helper with a
    # here-document before each of 2,000 steps: where the quoted job ends is found from one parse
    # (Script.embedded_to; one parse a here-document took 308 s on such a 208 KB text)
    quoted = "Notes: the job as submitted\n```\n" + HEAD + "".join(
        f"cat > t{i}.sh <<'EOF'\n#!/bin/bash\necho {i}\nEOF\nsrun -n1 ./t{i}.sh\n" for i in range(LINES // 5)) + "```\n"
    # 300 look-alike lines of 100 options each beside 5,000 live directives, before the first command: each
    # look-alike is compared with the live values read once (a scan of the live options per look-alike
    # option took 19.6 s on such a script)
    lookalikes = ("#!/bin/bash\n" + "#SBATCH -t1\n" * 5_000 + ("#sbatch" + " -t1" * 100 + "\n") * 300
                  + "set -euo pipefail\n" + "".join(f"srun -n1 hostname {i}\n" for i in range(LINES // 10)))
    # 2,000 exported functions, each run by a step by its name (launch-kill-on-bad-exit reads the function in
    # force at the step from one index of function bodies: a scan per name took 9.2 s on 4,400 of them)
    functions = "".join(f"f{i}() {{\n  mkdir -p d{i}\n}}\nexport -f f{i}\nsrun bash -c f{i}\n"
                        for i in range(LINES // 5))
    # 4,000 node-local paths from SLURM_PROCID in a job of one task per node, and 2,000 steps
    # (launch-per-task-variable decides one task per node once per script: 4.7 s when asked per path)
    node_local = "".join(f"export C{i}=/tmp/c{i}_${{SLURM_PROCID}}\n" for i in range(4_000)) + \
        "".join(f"srun -K1 hostname {i}\n" for i in range(LINES // 5))
    # one `python -c` payload of 40,000 `$A` numbers (its quotes counted once: 48 s when counted per expansion)
    long_code = "srun python -c \"x = [" + ", ".join("$A" for _ in range(40_000)) + "]\"\n"
    # 2,000 print-only python checks (heredocs) after a training, no set -e: launch-strict-mode reads each
    # check's code with Python's ast once per script (round four hundred and twenty-three)
    checks = "python train.py\n" + "".join(f"python - <<'PY'\nimport torch\nprint({i}, torch.cuda.is_available())\nPY\n"
                                          for i in range(LINES // 5)) + "echo done\n"
    # 5,000 `conda activate` lines with no hook, each followed by a step (launch-conda-activate reads the script's
    # set-up commands once, then each activate)
    activates = "".join(f"conda activate env{i}\nsrun -K1 python run.py {i}\n" for i in range(LINES // 2))
    one_per_node = HEAD.replace("--nodes=2\n", "--nodes=2\n#SBATCH --ntasks-per-node=1\n")
    return {"exported-functions": HEAD + functions, "node-local-paths": one_per_node + node_local,
            "long-python-c": HEAD + long_code, "foreground": HEAD + foreground, "background": HEAD + background,
            "in-function": HEAD + in_function, "array-args": HEAD + array_args, "mixed": HEAD + mixed + "wait\n",
            "wait-checks": HEAD + wait_checks, "killed-servers": HEAD + killed, "case-arms": HEAD + case_arms,
            "quoted-heredocs": quoted, "lookalikes": lookalikes,
            "python-checks": HEAD.replace("set -euo pipefail\n", "") + checks, "conda-activates": HEAD + activates,
            # one activate, then 80,000 lines of blanks: the search for a `conda()` definition once took 120 s+
            "conda-blank-lines": HEAD + "conda activate train\n" + " \t\n" * 80_000,
            # 2,500 loops of a step and an echo, no set -e (launch-strict-mode reads each srun's loop once)
            "loop-turns": HEAD.replace("set -euo pipefail\n", "") + "".join(
                f"for s in 1 2; do\n  srun -K1 ./run {i} \"$s\" | tee l{i}.log\n  echo {i}\ndone\n"
                for i in range(LINES // 4)),
            # this session's paths (2026-12-07, from 12:14): 5,000 steps under `timeout $Ln` with the durations set in
            # the file (launch-kill-on-bad-exit reads each name's literal values once: 8.7 s when read per step),
            # 10,000 --multi-prog steps (the MPMD check reads the file once: 17.8 s per step), 10,000 background steps
            # in one pipeline's loop (launch-bare-wait asks once per subshell whether it has its own wait), and
            # 5,000 per-task values that nothing reads (launch-per-task-variable's readers once: 49 s per value)
            "timeout-variables": HEAD + "".join(f"L{i}=30m\ntimeout $L{i} srun ./s{i}\n" for i in range(LINES // 2)),
            "multi-prog": HEAD + "".join(f"srun --multi-prog c{i}\n" for i in range(LINES)),
            "pipeline-background": HEAD + "cat list | while read -r l; do\n" + "".join(
                f"  srun -n1 ./s{i} \"$l\" &\n" for i in range(LINES)) + "done\nwait\n",
            "unread-per-task": HEAD + "".join(f"p{i}=\"rank_${{SLURM_PROCID}}.{i}\"\n" for i in range(LINES // 2))
            + "srun -K1 hostname\n",
            # 5,000 per-task values each handed to a step's own --rank (launch-per-task-variable's node-rank test read
            # every line once per holder: 3.6 s for 4,000 holders at 76f1e9e)
            "rank-holders": HEAD + "".join(f"r{i}=$SLURM_PROCID\n" for i in range(LINES // 2))
            + "".join(f"srun -K1 ./app --rank \"$r{i}\"\n" for i in range(LINES // 2)),
            # 5,000 `srun ... &` / `wait` pairs without errexit and a wait followed by 20,000 comment lines
            # (launch-bare-wait lists each block's statements once: 14.9 s and 1.1 s at 397ba02, which walked sibling by
            # sibling; a review's 100,000 comment lines took 21 s there)
            "wait-pairs": HEAD.replace("set -euo pipefail\n", "") + "".join(
                f"srun -n1 ./s{i} &\nwait\n" for i in range(LINES // 2)) + "echo done\n",
            "wait-then-comments": HEAD.replace("set -euo pipefail\n", "") + "srun -n2 ./s &\nwait\n"
            + "# a note\n" * (2 * LINES) + "echo done\n",
            # 10,000 result checks that exit or cancel in one arm of a file test (base.checks_results_after lists each
            # if's conditions once: 3.8 s at 397ba02, and 123 s for 20,000 scancels at 916b512, a review's probes)
            "arm-exits": HEAD.replace("set -euo pipefail\n", "") + "srun -n2 ./s\nif [ ! -f done ]; then\n" + "".join(
                f"[ -f o{i} ]||exit 1\n[ -s p{i} ]||scancel $J\n" for i in range(LINES // 2))
            + "fi\nexit 0\n",
            # 10,000 misspelt directives before the first command (sbatch-lookalike's one-edit test per line)
            "misspelt-directives": "#!/bin/bash\n" + "".join(f"#SBACTH --job-name=j{i}\n" for i in range(LINES))
            + "srun -K1 hostname\n"}


def run_once(path: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "validator", "--no-shellcheck", str(path)], cwd=ROOT,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        raise SystemExit(f"{path.name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> int:
    print(f"{LINES} srun lines per script, --no-shellcheck, median of {RUNS} runs (wall s)")
    with tempfile.TemporaryDirectory(prefix="bench-srun-") as tmp:
        for name, text in shapes().items():
            path = Path(tmp) / f"{name}.sbatch"
            path.write_text(text)
            times = [run_once(path) for _ in range(RUNS)]
            print(f"  {name:15} {len(text.encode()) // 1024:4d} KiB  median {statistics.median(times):7.2f} s"
                  f"  (min {min(times):.2f}, max {max(times):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
