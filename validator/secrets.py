"""What a secret looks like, once for the whole validator: the rules that look for one and the finding
model, which never prints one (a log of findings is a log; the project's rule: no secrets in logs)."""
from __future__ import annotations

import re

# A secret is what a variable holds, and a name says what it holds in its last word: HF_TOKEN,
# WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, ENROOT_PASSWORD hold one; MAX_NEW_TOKENS, TOKENIZER, a
# TOKEN_FILE or PASSWORD_PATH (where one is kept) and a training setting named after tokens
# (DRGRPO_TOKEN_PRIMARY, round twenty: 3 of 3 judged false) do not.
_SECRET = re.compile(r"(^|_)(API_?KEY|ACCESS_KEY|SECRET_?KEY|PRIVATE_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|"
                     r"CREDENTIALS?)$", re.IGNORECASE)
PASSWORD = re.compile(r"(?i)(^|_)(PASSWORD|PASSWD)$")

# Formats the issuers fix: a match is a credential wherever it stands (a comment too). OpenAI's keys
# mix capitals and digits after sk- (sk-proj-...): `sk-learn-results-2024` in a path is no key.
TOKEN_FORMATS = re.compile(
    r"(?<![A-Za-z0-9_/.-])(hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|sk-(?:proj-)?(?=[A-Za-z0-9_-]*[A-Z][A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*[0-9])"
    r"[A-Za-z0-9_-]{32,}|xox[abprs]-[A-Za-z0-9-]{10,})(?![A-Za-z0-9_])")
ISSUERS = (("hf_", "a Hugging Face token"), ("github_pat_", "a GitHub token"), ("gh", "a GitHub token"),
           ("AKIA", "an AWS access key id"), ("ASIA", "an AWS access key id"), ("sk-", "an OpenAI API key"),
           ("xox", "a Slack token"))
# NAME=value where the name says it holds a secret and the value is written out (not $VAR, not empty)
_NAMED_VALUE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=([\"']?)([^\s\"',;$`][^\s\"',;`]*)")


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def issuer(token: str) -> str:
    """Which kind of credential a token of a fixed format is, without any of its characters."""
    return next((name for prefix, name in ISSUERS if token.startswith(prefix)), "a credential")


def named_values(text: str):
    """(match, name, value) for every NAME=value in a text whose name says it holds a secret."""
    for match in _NAMED_VALUE.finditer(text):
        if is_secret(match.group(1)):
            yield match, match.group(1), match.group(3)


def redact(text: str) -> str:
    """The text with every credential of a fixed format, and every value of a secret-named NAME=value,
    replaced: a finding may quote a directive or a command (`--export=ALL,WANDB_API_KEY=...`)."""
    if "=" not in text and not TOKEN_FORMATS.search(text):
        return text
    text = TOKEN_FORMATS.sub(lambda m: f"<{issuer(m.group(0))[2:].lstrip(' ')} redacted>", text)
    return _NAMED_VALUE.sub(lambda m: f"{m.group(1)}={m.group(2)}<redacted>" if is_secret(m.group(1)) else m.group(0),
                            text)
