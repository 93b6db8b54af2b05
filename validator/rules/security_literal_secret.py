"""A credential written into the job script (wandb login KEY, HF_TOKEN=hf_..., an AWS key id) is kept with the job and readable by whoever reads the script.

Premise: sbatch sends the script's text to slurmctld, which keeps it with the job (`scontrol write
batch_script JOBID` writes it back: scontrol.1), and with AccountingStoreFlags=job_script the
accounting database keeps it too (`sacct --batch-script`; slurm.conf.5 and sacct.1 at
slurm-22-05-0-1 and slurm-26-05-1-1: "Include the job's batch script in the job start message sent to
the Accounting Storage database"). A token in the text is in every copy of the script and in the
repository it was committed to. Holds for: 22.05-26.05. Read it at run time instead: from a file
only the account can read (`export WANDB_API_KEY=$(cat ~/.wandb_key)`), `wandb login` once on a
login node (~/.netrc), or the environment the job inherits.
Reported: a token of a format its issuer fixes (validator.secrets.TOKEN_FORMATS: Hugging Face
`hf_...`, GitHub `ghp_...`/`github_pat_...`, AWS key ids `AKIA...`, OpenAI `sk-...`, Slack `xox?-...`),
a literal key given to `wandb login` or `huggingface-cli login --token`, a key-shaped literal (20 or
more letters, digits, '_', '-' or base64's '+/=', with four digits and four letters at least, not a
run of words like `llama2_7b_tokenizer_v2`) in
a variable named as a secret, also inside a directive or an option (`--export=ALL,WANDB_API_KEY=...`),
and any literal of six or more characters in a PASSWORD or PASSWD variable that is not a path.
Placeholders (`<your key>`, YOUR_TOKEN, xxxx) are no credential. The finding names the kind of
credential, never its characters (and validator.findings redacts any message that would quote one).
"""
import re

from validator.rules.base import with_payloads
from validator.sbatch import TEMPLATE
from validator.secrets import PASSWORD, TOKEN_FORMATS, issuer, named_values

ID = "security-literal-secret"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A credential written into the job script (wandb login KEY, HF_TOKEN=hf_..., an AWS key id) is kept "
               "with the job (scontrol write batch_script, sacct --batch-script) and in every copy of the file; read "
               "it from a file at run time.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                      "WANDB_API_KEY=$(cat \"$HOME/.config/wandb_key\")\nexport WANDB_API_KEY\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                     "wandb login 505ce3ad45fdf9309c3d8ec1d9764262ae6929c0\n"}

_KEY = re.compile(r"[A-Za-z0-9_+=-][A-Za-z0-9_+/=-]{19,}")  # base64 keys hold '+', '/', '=' (an AWS secret key)
# A value that says it is no key: a placeholder, an example, a hash algorithm's tag (sha256-...)
# the word itself as the value (`PASSWD=password`, round 515's OpenHPC recipe) is the textbook placeholder
_NOT_A_KEY = re.compile(r"(?i)your|xxxx|change_?me|replace|example|dummy|<|>|\.\.\.|^(sha|md5|blake)[0-9]*[-:]"
                        r"|^(password|passwd|passw0rd|secret)$")
# `wandb login [--host URL] [--relogin] KEY`, `huggingface-cli login --token KEY`, `hf auth login --token KEY`
_LOGINS = {"wandb": ("login",), "huggingface-cli": ("login",), "hf": ("auth", "login")}
_LOGIN_VALUED = {"--host", "--cloud", "--token"}
_KEEP = "is kept with the job (scontrol write batch_script; sacct --batch-script where accounting stores scripts)"


def _no_credential(text: str) -> bool:
    """A placeholder or an example, a hash's tag, or a tool's template token (password="[_PY_X_]")."""
    return bool(_NOT_A_KEY.search(text) or TEMPLATE.search(text))


def _key_shaped(text: str | None) -> bool:
    """20 or more key characters with four digits and four letters at least, and not a run of words
    (`llama2_7b_tokenizer_v2_2048`: three or more alphabetic parts of three letters or more)."""
    if not text or not _KEY.fullmatch(text) or _no_credential(text) or "//" in text:
        return False
    words = [part for part in re.split(r"[_/-]", text) if re.search(r"[a-z]{3}", part)]
    return len(words) < 2 and sum(ch.isdigit() for ch in text) >= 4 and sum(ch.isalpha() for ch in text) >= 4


def _password(name: str, value: str | None) -> bool:
    """Any literal of six or more characters in a PASSWORD variable, but a path (a secret's file)."""
    return bool(PASSWORD.search(name) and value and len(value) >= 6 and "/" not in value
                and not _no_credential(value))


def _login_key(command):
    """The key word of a login command, or None."""
    sub = _LOGINS.get(command.name.rsplit("/", 1)[-1])
    if sub is None or [a.value for a in command.args[:len(sub)]] != list(sub):
        return None
    token = command.option("--token")
    if token is not None:
        return token
    rest, skip = [], False
    for word in command.args[len(sub):]:
        if skip:
            skip = False
        elif (word.value or "").startswith("-"):
            skip = word.value in _LOGIN_VALUED
        else:
            rest.append(word)
    return rest[-1] if rest else None


def check(target):
    script = target.script
    seen = set()
    message = f"{_KEEP} and in every copy of the file; revoke it and read it from a file at run time"
    for number, line in enumerate(script.parsed.lines, start=1):
        found = TOKEN_FORMATS.search(line)
        if found:
            seen.add(number)
            yield (script.display, number, found.start() + 1,
                   f"{issuer(found.group(0))} is written into the script: it {message}")
            continue
        for match, name, value in named_values(line):  # also in a directive or an option: --export=...,KEY=...
            if _key_shaped(value) or _password(name, value):
                seen.add(number)
                kind = "key" if _key_shaped(value) else "password"
                yield (script.display, number, match.start() + 1, f"{name} holds a literal {kind}: it {message}")
                break
    for command, _ in with_payloads(script.shell):
        token = _login_key(command)
        if token is not None and _key_shaped(token.value) and token.line not in seen:
            seen.add(token.line)
            yield (script.display, token.line, token.col,
                   f"{command.name} login with the key written out: it {_KEEP} and in every copy of the file; "
                   "revoke it and log in once from a login node")
