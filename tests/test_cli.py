"""The command line as users run it: exit codes, formats, lone scripts, broken presets."""
import json
import os
import shutil

import pytest

from conftest import FIXTURES, ROOT, edited_preset, run_validator


def test_presets_are_clean():
    proc = run_validator("--summary")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert "clean" in proc.stderr


def test_broken_copy_of_a_preset_is_reported(tmp_path):
    copy = edited_preset(tmp_path, "gh200", {"train.sbatch": [("#SBATCH --time=00:30:00", "#SBATCH --tme=00:30:00")]},
                         into=tmp_path / "presets")
    proc = run_validator(str(copy))
    assert proc.returncode == 1
    assert "train.sbatch:9:9: error: unknown sbatch option '--tme'" in proc.stdout


def test_lone_script_json(tmp_path):
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --gpus-per-tsk=8\necho $X\n")
    proc = run_validator("--format", "json", "--strict", str(script))
    assert proc.returncode == 1
    findings = json.loads(proc.stdout)
    assert {f["rule"] for f in findings} >= {"sbatch-unknown-option", "SC2086"}
    assert set(findings[0]) == {"path", "line", "col", "severity", "rule", "message"}
    # the default profile of a foreign script: defects and real risks, not shellcheck's style/info
    default = {f["rule"] for f in json.loads(run_validator("--format", "json", str(script)).stdout)}
    assert "sbatch-unknown-option" in default and "SC2086" not in default


def test_github_and_sarif_formats(tmp_path):
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --gpus-per-tsk=8\n")
    gh = run_validator("--format", "github", str(script))
    assert gh.stdout.startswith("::error file=")
    sarif = json.loads(run_validator("--format", "sarif", str(script)).stdout)
    assert "sbatch-unknown-option" in {r["ruleId"] for r in sarif["runs"][0]["results"]}


def test_select_and_ignore(tmp_path):
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --gpus-per-tsk=8\necho $X\n")
    only_sc = run_validator("--strict", "--select", "SC*", str(script))
    assert "sbatch-unknown-option" not in only_sc.stdout and "SC2086" in only_sc.stdout
    none = run_validator("--ignore", "SC*,sbatch-*,launch-*", str(script))
    assert none.returncode == 0 and none.stdout == ""


def test_slurm_version_option(tmp_path):
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --time=5 --tres-bind=gres/gpu:verbose\nset -euo pipefail\n")
    assert run_validator("--slurm-version", "22.05", str(script)).returncode == 1
    assert run_validator("--slurm-version", "24.05", str(script)).returncode == 0
    assert run_validator(str(script)).returncode == 0  # a foreign script: the newest release


def test_repository_config_sets_release_and_profile(tmp_path):
    (tmp_path / ".git").mkdir()
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --time=5 --tres-bind=gres/gpu:verbose\nset -euo pipefail\necho $HOME\n")
    assert run_validator(str(script)).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.preset-validator]\nslurm-version = "22.05"\n')
    assert "not available in Slurm 22.05" in run_validator(str(script)).stdout
    (tmp_path / ".validator.toml").write_text("strict = true\n")  # nearer than pyproject's table
    proc = run_validator(str(script))
    assert "SC2086" in proc.stdout and "tres-bind" not in proc.stdout
    (tmp_path / ".validator.toml").write_text("strict = 'yes'\n")
    proc = run_validator(str(script))
    assert proc.returncode == 2 and ".validator.toml:1:10: 'strict' must be true or false, not a string" in proc.stderr
    (tmp_path / ".validator.toml").unlink()
    os.mkfifo(tmp_path / ".validator.toml")  # never opened: a read would block
    proc = run_validator(str(script))
    assert proc.returncode == 2 and ".validator.toml: not a regular file" in proc.stderr, proc.stderr


def test_usage_errors_exit_2(tmp_path):
    assert run_validator(str(tmp_path / "missing.sbatch")).returncode == 2
    assert run_validator("--format", "xml").returncode == 2
    proc = run_validator(str(tmp_path))  # a folder with nothing to validate
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_shellcheck_missing_is_internal_failure():
    proc = run_validator(str(FIXTURES / "ok" / "lone.sbatch"), env={"VALIDATOR_SHELLCHECK": "/nonexistent/sc"})
    assert proc.returncode == 3
    assert "internal failure" in proc.stderr and "Traceback" not in proc.stderr


def test_symlink_escaping_the_repository_is_refused(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "ok" / "example", repo / "presets" / "example")
    outside = tmp_path / "outside.yaml"
    outside.write_text((repo / "presets" / "example" / "preset.yaml").read_text())
    manifest = repo / "presets" / "example" / "preset.yaml"
    manifest.unlink()
    os.symlink(outside, manifest)
    proc = run_validator(cwd=repo)
    assert proc.returncode == 2
    assert "preset.yaml:1:1: error: symbolic link leaves the repository" in proc.stdout


def test_huge_file_is_refused_unread(tmp_path):
    script = tmp_path / "huge.sbatch"
    script.write_text("#!/bin/bash\n" + "# padding\n" * 40000)
    proc = run_validator(str(script))
    assert proc.returncode == 2
    assert "[input-too-large]" in proc.stdout


def test_fifo_is_refused(tmp_path):
    fifo = tmp_path / "pipe.sbatch"
    os.mkfifo(fifo)
    proc = run_validator(str(fifo))
    assert proc.returncode == 2 and "[input-not-regular]" in proc.stdout


def test_rules_listing():
    proc = run_validator("rules")
    assert proc.returncode == 0 and "sbatch-unknown-option" in proc.stdout
    listed = {line.split()[0]: line.split()[2] for line in proc.stdout.splitlines()}
    assert listed["policy-collnet-nvls"] == "strict" and listed["launch-time-limit"] == "default"


def test_site_spank_options_from_config(tmp_path):
    """Known plugins' options pass in the default profile, and so does an option unlike any of Slurm's
    (a site plugin's); --strict wants them declared; a site plugin's options are declared in the
    repository config, without a 'did you mean' guess."""
    (tmp_path / ".git").mkdir()
    script = tmp_path / "mine.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --time=5\n#SBATCH --image=docker:ubuntu:22.04\n#SBATCH --tmpfs-size=10G\n"
                      "set -euo pipefail\necho ok\n")
    default = run_validator(str(script)).stdout
    assert "--image" not in default and "--tmpfs-size" not in default
    strict = run_validator("--strict", str(script)).stdout
    assert "'--image' comes from the shifter SPANK plugin" in strict and "did you mean" not in strict.split("\n")[0]
    assert "unknown sbatch option '--tmpfs-size'" in strict
    (tmp_path / ".validator.toml").write_text('spank = ["shifter"]\nspank-options = ["tmpfs-size"]\nstrict = true\n')
    assert run_validator(str(script)).stdout == ""


def _permission_checked() -> list[str]:
    """A command prefix under which permissions apply: root keeps its uid but loses
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (setpriv), so a mode-000 folder is really closed."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and util-linux setpriv is missing: a mode-000 folder would be readable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("closed", ["presets/secret", "scripts"])
def test_unreadable_folder_in_discovery_is_an_error_not_skipped(tmp_path, closed):
    """Permission denied during discovery (issue 14, class 5): a preset folder or the shared scripts/
    folder that cannot be searched is input-unreadable, exit 2. It was skipped: exit 0, silent."""
    shutil.copytree(ROOT / "presets" / "ethernet-only", tmp_path / "presets" / "ethernet-only")
    shutil.copytree(ROOT / "presets" / "ethernet-only", tmp_path / "presets" / "secret")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "job.sh").write_text("#!/bin/bash\necho ok\n")
    (tmp_path / closed).chmod(0)
    try:
        for args in (["presets"], []):  # a folder of presets named, and the default discovery
            proc = run_validator(*args, cwd=tmp_path, prefix=_permission_checked())
            if closed == "scripts" and args:
                assert "scripts" not in proc.stdout  # not part of what was asked
                continue
            assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
            named = [line for line in proc.stdout.splitlines() if line.startswith(closed)]
            assert named and all(line.endswith("[input-unreadable]") for line in named), (args, proc.stdout)
            assert "Traceback" not in proc.stderr
    finally:
        (tmp_path / closed).chmod(0o755)


def test_unreadable_config_is_a_usage_error(tmp_path):
    """A .validator.toml that cannot be read is exit 2 naming it, not a run with the defaults."""
    shutil.copytree(ROOT / "presets" / "ethernet-only", tmp_path / "presets" / "ethernet-only")
    config = tmp_path / ".validator.toml"
    config.write_text("strict = true\n")
    config.chmod(0)
    proc = run_validator("presets/ethernet-only", cwd=tmp_path, prefix=_permission_checked())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"validator: error: {config}: cannot read: Permission denied"


def test_another_languages_source_without_shebang_is_said_not_checked(tmp_path):
    """A Julia or Python file whose comment shows an example sbatch script is not a batch script (sbatch
    refuses a file without '#!'): one line on stderr, no findings; with a '#!' line it is checked."""
    source = tmp_path / "remap.jl"
    source.write_text('#=\nExample:\n#!/bin/bash\n#SBATCH --mem=32G\nmodule load julia\n=#\nusing Foo\n')
    result = run_validator(str(source))
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert "remap.jl: not checked: a .jl file without '#!'" in result.stderr
    script = tmp_path / "job.py"
    script.write_text("#!/usr/bin/env python3\n#SBATCH --nodes=2\nimport os\n")
    result = run_validator(str(script))
    assert result.returncode == 1 and "[launch-time-limit]" in result.stdout, result.stdout + result.stderr


def test_a_program_of_another_language_that_writes_a_job_is_said_not_checked(tmp_path):
    """A Perl or Python program whose #SBATCH lines follow a later '#!' line of a shell (a here-document or a
    string it writes to a job file) is a generator, never submitted: one line on stderr, no findings (round
    two hundred and seventy-five: 9 directives 'after the first command' of a Perl generator). Its own
    #SBATCH lines above such a line are still its own, and checked."""
    generator = tmp_path / "mkslurm.pl"
    generator.write_text('#!/usr/bin/perl\nmy $base = "/scratch";\n$slurm = <<__EOF;\n#!/bin/bash\n\n'
                         '#SBATCH -N 1\n#SBATCH -t 04:00:00\ncd $base\n__EOF\nprint $slurm;\n')
    result = run_validator(str(generator))
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
    assert "mkslurm.pl: not checked: its '#!' line runs perl, and its #SBATCH lines follow a later '#!' line" \
        in result.stderr
    job = tmp_path / "job.py"
    job.write_text('#!/usr/bin/env python3\n#SBATCH --nodes=2\nimport os\nTEXT = """#!/bin/bash\n#SBATCH -N 1\n"""\n')
    result = run_validator(str(job))
    assert result.returncode == 1 and "[launch-time-limit]" in result.stdout, result.stdout + result.stderr
    # only comments above the later '#!': sbatch reads these #SBATCH lines as the file's own
    commented = tmp_path / "commented.py"
    commented.write_text('#!/usr/bin/env python3\n# a job\n#!/bin/bash\n#SBATCH --ntasks=four\nimport os\n')
    result = run_validator(str(commented))
    assert result.returncode == 1 and "[sbatch-bad-value]" in result.stdout, result.stdout + result.stderr


def test_a_makefile_that_pipes_jobs_into_sbatch_is_said_not_checked(tmp_path):
    """A Makefile whose recipes print whole job scripts into sbatch (each with its '#!' and #SBATCH header)
    is make's syntax, never a job: one line on stderr, no findings (round thirty-nine: 73 findings on one)."""
    makefile = tmp_path / "makefile"
    makefile.write_text('all:\n\tprintf "#!/bin/bash\\n\\\n#SBATCH --time=1:00:00\\n\\\n#SBATCH -n 4\\n\\\n'
                        'srun ./a\\n" | sbatch\n\n#SBATCH -N 2\n')
    result = run_validator(str(makefile))
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
    assert "makefile: not checked: 'makefile' (make's)" in result.stderr


def test_quoted_job_copy_names_the_real_file_and_leaves_nothing(tmp_path):
    """shellcheck reads a quoted job's copy in a private temporary folder: the findings name the
    text itself, the folder is gone afterwards, and none is made for plain scripts."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    broken = FIXTURES / "err" / "foreign-report-quoting-a-broken-job"
    text = tmp_path / "notes.Rmd"
    shutil.copy(broken / "notes.Rmd", text)
    proc = run_validator("--format", "json", str(text), env={"TMPDIR": str(scratch)})
    assert proc.returncode == 1, proc.stderr
    assert {f["path"] for f in json.loads(proc.stdout)} == {str(text)}
    assert list(scratch.iterdir()) == []
    plain = FIXTURES / "ok" / "foreign-notes-glued-to-directives.sbatch"
    proc = run_validator(str(plain), env={"TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(scratch.iterdir()) == []


def test_a_sourced_repository_file_that_sets_errexit_is_the_jobs_strict_mode(tmp_path):
    """`source "${SLURM_SUBMIT_DIR:-$(pwd)}/slurm/env.sh"` whose top level runs `set -eo pipefail` (rounds 304,
    313, 317, 324: OpenADMET/SARizard's jobs) puts the batch shell in strict mode: no launch-strict-mode
    finding. A `set -e` only inside a function of the file, one the file turns off again, one behind a guard,
    a file sourced only in a branch, or a file that is not there, changes nothing."""
    (tmp_path / ".git").mkdir()  # the repository's root (engine.find_root)
    (tmp_path / "slurm").mkdir()
    job = tmp_path / "slurm" / "analyze.sbatch"
    job.write_text('#!/bin/bash\n#SBATCH --time=02:00:00\n#SBATCH --gres=gpu:1\n'
                   'source "${SLURM_SUBMIT_DIR:-$(pwd)}/slurm/env.sh"\npython evaluate.py\necho "done"\n')
    env = tmp_path / "slurm" / "env.sh"
    env.write_text("set -eo pipefail\nexport PROJECT_ROOT=/project\n")
    result = run_validator(str(job))
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
    env.write_text("strict() {\n  set -eo pipefail\n}\nexport PROJECT_ROOT=/project\n")
    result = run_validator(str(job))
    assert result.returncode == 1 and "[launch-strict-mode]" in result.stdout, result.stdout + result.stderr
    env.write_text("set -euo pipefail\nexport PROJECT_ROOT=/project\nset +euo pipefail\n")  # restores what it set
    result = run_validator(str(job))
    assert result.returncode == 1 and "[launch-strict-mode]" in result.stdout, result.stdout + result.stderr
    env.write_text('[[ "${BASH_SOURCE[0]}" == "$0" ]] && set -e\nif [[ -n $STRICT ]]; then set -e; fi\n')
    result = run_validator(str(job))
    assert result.returncode == 1 and "[launch-strict-mode]" in result.stdout, result.stdout + result.stderr
    env.write_text("set -eo pipefail\n")
    job.write_text(job.read_text().replace('source "${SLURM_SUBMIT_DIR:-$(pwd)}/slurm/env.sh"',
                                           'if [[ $DEBUG == 1 ]]; then source slurm/env.sh; fi'))
    result = run_validator(str(job))  # sourced only in a branch: not every run
    assert result.returncode == 1 and "[launch-strict-mode]" in result.stdout, result.stdout + result.stderr
    env.unlink()
    result = run_validator(str(job))
    assert result.returncode == 1 and "[launch-strict-mode]" in result.stdout, result.stdout + result.stderr


def test_a_job_whose_submitter_passes_a_time_limit_is_bounded(tmp_path):
    """A job without #SBATCH --time that a script of its repository submits with `sbatch -t` (Megatron-LM's
    functional tests, rounds 338 and 346: `sbatch -t $TIME_LIMIT .../sbatch_${RUN_MODEL}_distributed_test.sh`)
    gets its limit from the command line, which overrides the script's directives (sbatch.1): no
    launch-time-limit finding in the default profile. A submitter without a limit, a name that does not match,
    the job's own resubmission, or the strict profile: still reported."""
    (tmp_path / ".git").mkdir()  # the repository's root (engine.find_root)
    (tmp_path / "test_scripts" / "gpt3").mkdir(parents=True)
    (tmp_path / "utils").mkdir()
    job = tmp_path / "test_scripts" / "gpt3" / "sbatch_gpt3_distributed_test.sh"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1 --exclusive\nset -euo pipefail\n"
                   "srun --kill-on-bad-exit=1 bash ./pretrain.sh\n")
    launcher = tmp_path / "utils" / "run_launcher.sh"
    launcher.write_text('#!/bin/bash\nset -euo pipefail\nout=`sbatch -t $TIME_LIMIT \\\n'
                        '  $BUILD_DIR/test_scripts/$RUN_MODEL/sbatch_${RUN_MODEL}_distributed_test.sh --export=ALL`\n')
    assert (run_validator(str(job)).returncode, run_validator(str(job)).stdout) == (0, "")
    result = run_validator("--strict", str(job))
    assert "[launch-time-limit]" in result.stdout, result.stdout + result.stderr
    launcher.write_text('#!/bin/bash\nsbatch --nodes=1 test_scripts/gpt3/sbatch_gpt3_distributed_test.sh\n')
    result = run_validator(str(job))  # submitted without a limit
    assert "[launch-time-limit]" in result.stdout, result.stdout + result.stderr
    launcher.write_text('#!/bin/bash\nsbatch --time=01:00:00 test_scripts/gpt3/sbatch_t5_distributed_test.sh\n')
    result = run_validator(str(job))  # another job
    assert "[launch-time-limit]" in result.stdout, result.stdout + result.stderr
    launcher.unlink()
    notes = tmp_path / "commands.md"  # notes that give the command to submit with
    notes.write_text("Submit with:\n\n    sbatch --time=72:00:00 --gres=gpu:v100:1 test_scripts/gpt3/"
                     "sbatch_gpt3_distributed_test.sh\n")
    assert run_validator(str(job)).stdout == ""
    notes.unlink()
    job.write_text(job.read_text() + "sbatch --time=00:10:00 --dependency=afterany:$SLURM_JOB_ID "
                   "sbatch_gpt3_distributed_test.sh\n")
    result = run_validator(str(job))  # its own follow-up: the first run is still unbounded
    assert "[launch-time-limit]" in result.stdout, result.stdout + result.stderr


def test_a_submitters_time_limit_names_its_own_job_only(tmp_path):
    """What a submitter's sbatch command must say for launch-time-limit to leave a job alone: the job's path
    (a folder it names must be the job's: exp_a/train.sbatch is no exp_b/train.sbatch), a name with letters of
    its own (`${RUN}.sbatch` names no file), the limit before the job's file (`sbatch job.sbatch -t 8` passes
    -t to the job), not in a comment, and a file of the same repository; outside a repository only the job's own
    folder is read, and a FIFO there is not opened."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for folder in ("exp_a", "exp_b", "jobs"):
        (repo / folder).mkdir()
    job_text = "#!/bin/bash\n#SBATCH --nodes=1\nset -euo pipefail\npython train.py\n"
    a, b = repo / "exp_a" / "train.sbatch", repo / "exp_b" / "train.sbatch"
    a.write_text(job_text)
    b.write_text(job_text)
    (repo / "README.md").write_text("Submit with\n\n    sbatch --time=02:00:00 exp_a/train.sbatch\n")
    assert run_validator(str(a)).stdout == ""
    assert "[launch-time-limit]" in run_validator(str(b)).stdout
    pretrain = repo / "jobs" / "pretrain_large.sbatch"
    pretrain.write_text(job_text)
    notes = repo / "jobs" / "notes.md"
    for line in ('sbatch -t 30 "${RUN}.sbatch"\n', "sbatch pretrain_large.sbatch -t 8\n",
                 "# sbatch --time=00:10:00 pretrain_large.sbatch\n",
                 "sbatch pretrain_large.sbatch  # then: squeue -u $USER -t R\n",
                 "sbatch pretrain_large.sbatch & watch squeue -t RUNNING\n"):
        notes.write_text(line)
        assert "[launch-time-limit]" in run_validator(str(pretrain)).stdout, line
    notes.write_text('subprocess.run(["sbatch", "--time", limit, "--parsable", "jobs/pretrain_large.sbatch"])\n')
    assert run_validator(str(pretrain)).stdout == ""
    loose = tmp_path / "loose"  # no repository above it: the job's folder only
    (loose / "deeper").mkdir(parents=True)
    job = loose / "pretrain_large.sbatch"
    job.write_text(job_text)
    (loose / "deeper" / "submit.sh").write_text("sbatch --time=01:00:00 ../pretrain_large.sbatch\n")
    os.mkfifo(loose / "pipe.sh")  # never opened: the run ends
    result = run_validator(str(job), cwd=str(loose))
    assert "[launch-time-limit]" in result.stdout, result.stdout + result.stderr
