"""A credential written into the job script (wandb login KEY, HF_TOKEN=hf_..., an AWS key id) is stored with the job and readable by whoever reads the script.

Premise: sbatch sends the script's text to slurmctld, and with AccountingStoreFlags=job_script the
accounting database keeps it: `sacct --batch-script` prints it back (slurm.conf.5 and sacct.1 at
slurm-22-05-0-1 and slurm-26-05-1-1: "Include the job's batch script in the job start message sent to
the Accounting Storage database"). A token in the text is in every copy of the script, in the
repository it was committed to, and in the site's accounting. Holds for: 22.05-26.05. Read it at run
time instead: from a file only the account can read (`export WANDB_API_KEY=$(cat ~/.wandb_key)`),
`wandb login` once on a login node (~/.netrc), or the environment the job inherits.
Reported: a token of a format its issuer fixes (Hugging Face `hf_...`, GitHub `ghp_...` and
`github_pat_...`, AWS access key ids `AKIA...`/`ASIA...`, OpenAI `sk-...`, Slack `xox?-...`), a
literal key given to `wandb login` or `huggingface-cli login --token`, and a literal of 20 or more
letters and digits assigned to a variable named as a secret (WANDB_API_KEY=505c...), and any literal
of six or more characters assigned to a PASSWORD or PASSWD variable (round twenty-six: a download
portal's password). Placeholders
(`<your key>`, YOUR_TOKEN, xxxx) are no credential.
"""
import re

from validator.rules.base import is_secret, with_payloads

ID = "security-literal-secret"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A credential written into the job script (wandb login KEY, HF_TOKEN=hf_..., an AWS key id) is stored "
               "with the job (sacct --batch-script) and in every copy of the file; read it from a file at run time.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                      "WANDB_API_KEY=$(cat \"$HOME/.config/wandb_key\")\nexport WANDB_API_KEY\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                     "wandb login 505ce3ad45fdf9309c3d8ec1d9764262ae6929c0\n"}

# Formats that the issuers fix: a match is a credential, wherever it stands (a comment too).
_FORMATS = re.compile(r"(?<![A-Za-z0-9_])(hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}"
                      r"|(?:AKIA|ASIA)[0-9A-Z]{16}|sk-(?:proj-)?[A-Za-z0-9_-]{32,}|xox[abprs]-[A-Za-z0-9-]{10,})"
                      r"(?![A-Za-z0-9_])")
# A key-shaped literal: 20 or more letters, digits, '_' or '-', with at least four of each kind
_KEY = re.compile(r"[A-Za-z0-9_-]{20,}")
_PLACEHOLDER = re.compile(r"(?i)your|xxxx|change_?me|replace|example|dummy|<|>|\.\.\.")
# A password is any literal, not only a key-shaped one (PASSWORD='...' for a download portal)
_PASSWORD = re.compile(r"(?i)(^|_)(PASSWORD|PASSWD)$")
_LOGINS = {"wandb": ("login",), "huggingface-cli": ("login",), "hf": ("auth", "login")}


def _issuer(token: str) -> str:
    """Which kind of credential, without any of its characters (a finding must not repeat the secret)."""
    for prefix, name in (("hf_", "a Hugging Face token"), ("gh", "a GitHub token"), ("AKIA", "an AWS access key id"),
                         ("ASIA", "an AWS access key id"), ("sk-", "an OpenAI API key"), ("xox", "a Slack token")):
        if token.startswith(prefix):
            return name
    return "a credential"


def _key_shaped(text: str | None) -> bool:
    if not text or not _KEY.fullmatch(text) or _PLACEHOLDER.search(text):
        return False
    return sum(ch.isdigit() for ch in text) >= 4 and sum(ch.isalpha() for ch in text) >= 4


def check(target):
    script = target.script
    seen = set()
    for number, line in enumerate(script.parsed.lines, start=1):
        found = _FORMATS.search(line)
        if found:
            seen.add(number)
            yield (script.display, number, found.start() + 1,
                   f"{_issuer(found.group(0))} is written into the script: it is stored with the job "
                   "(sacct --batch-script) and in every copy of the file; revoke it and read it from a file at run time")
    for command, _ in with_payloads(script.shell):
        sub = _LOGINS.get(command.name.rsplit("/", 1)[-1])
        words = command.args
        if sub is None or [a.value for a in words[:len(sub)]] != list(sub):
            continue
        rest = words[len(sub):]
        token = command.option("--token") or next((a for a in rest if a.value and not a.value.startswith("-")), None)
        if token is not None and _key_shaped(token.value) and token.line not in seen:
            seen.add(token.line)
            yield (script.display, token.line, token.col,
                   f"{command.name} {' '.join(sub)} with the key written out: it is stored with the job (sacct "
                   "--batch-script) and in every copy of the file; revoke it and log in once from a login node")
    for assignment in script.shell.assignments:
        literal = "$" not in assignment.raw and "`" not in assignment.raw
        password = _PASSWORD.search(assignment.name) and assignment.value and len(assignment.value) >= 6 \
            and not _PLACEHOLDER.search(assignment.value)
        if is_secret(assignment.name) and literal and (_key_shaped(assignment.value) or password) \
                and assignment.line not in seen:
            seen.add(assignment.line)
            yield (script.display, assignment.line, assignment.col,
                   f"{assignment.name} holds a literal {'password' if password and not _key_shaped(assignment.value) else 'key'}: it is stored with the job (sacct --batch-script) and in "
                   "every copy of the file; revoke it and read it from a file at run time")
