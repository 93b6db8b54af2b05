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


# A tokenizer's vocabulary token, not a credential: Hugging Face tokenizers' bos_token, eos_token, pad_token ...,
# diffusers' textual inversion --placeholder_token and --initializer_token (round 540's Animate124 job), token
# counts (MAX_TOKEN) and MoE switches (Megatron-DeepSpeed's MOE_DROP_TOKEN="true", round 540)
_VOCABULARY_TOKEN = re.compile(r"(?i)(^|_)(placeholder|initializer|init|bos|eos|pad|unk|sep|cls|mask|special|drop"
                               r"|start|end|stop|max|min|num|image|video|audio)_?token$")


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name)) and not _VOCABULARY_TOKEN.search(name)


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


# What a script's variables hold, read from its shell parse (validator.shell): the rules that look for a
# secret where it may be printed (security-secret-echo, security-xtrace) read "holds a secret" here, once.
# A key for a server that checks none: the job's own vLLM or llama.cpp server (vLLM's examples: api_key="EMPTY",
# `--api-key token-abc123`; "sk-no-key-required"), or a dummy. Not a placeholder that asks for the real key
# (`WANDB_API_KEY=... # your wandb API key`, `HF_TOKEN=<your-token-here>`): filled in, the trace prints it.
_NO_KEY_WORD = re.compile(r"(?i)empty|none|null|dummy|fake|n/?a|no[-_]?key|not[-_]?needed|unused"
                          r"|sk-no-key-required|token-abc123")


def placeholder_only(shell, name: str) -> bool:
    """Every value the script gives NAME is a literal key for a server that checks none (`export
    OPENAI_API_KEY="dummy"` for the job's own vLLM server, round four hundred and six): printing it shows
    nothing the file does not. A name the script never assigns may come from the environment: not shown."""
    assignments = shell.assigned(name)
    for assignment in assignments:
        raw = assignment.raw.split("=", 1)[-1]
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else raw
        if "$" in raw or "`" in raw or not _NO_KEY_WORD.fullmatch(value):
            return False
    return bool(assignments)


_PUBLIC = {"USER", "LOGNAME", "HOSTNAME", "HOME", "RANDOM", "PWD"}
_EXPANDED = re.compile(r"\$\{?(\w+)")


def built_from_public(shell, name: str, seen: dict, depth: int = 0) -> bool:
    """Every value the script gives NAME is made of expansions of public names and literal glue, with
    at least one expansion and no command substitution (`$(openssl rand ...)` makes a secret). A
    public name is the user's, a SLURM_ value, or a variable of the script's own whose every value is
    itself public or a plain literal with no command substitution (`port=$((RANDOM % 1000 + 50000))`),
    followed through other variables (`rand=$(openssl rand -hex 24)`, `token=${rand}` stays secret).
    Memoised per name (`seen`): linear in the script."""
    if name in seen:
        return seen[name]
    seen[name] = False  # a cycle, or too deep: not shown public
    assignments = shell.assigned(name)
    ok = bool(assignments) and depth < 8
    for assignment in assignments if ok else ():
        raw = assignment.raw.split("=", 1)[-1]
        names = _EXPANDED.findall(raw)
        if not names or "$(" in raw.replace("$((", "") or "`" in raw:
            ok = False
            break
        for used in names:
            if used.isdigit() or is_secret(used):
                ok = False
            elif used not in _PUBLIC and not used.startswith("SLURM_"):
                ok = _plain_or_public(shell, used, seen, depth + 1)
            if not ok:
                break
        if not ok:
            break
    seen[name] = ok
    return ok


def _plain_or_public(shell, name: str, seen: dict, depth: int) -> bool:
    """A variable of the script's own that holds nothing secret: every value a literal or arithmetic
    without command substitution, or itself built from public names."""
    assignments = shell.assigned(name)
    if assignments and all("$" not in a.raw.split("=", 1)[-1].replace("$((", "", 1) and "`" not in a.raw
                           for a in assignments):
        return True
    return built_from_public(shell, name, seen, depth)


# A read that hands the value on: `$KEY`, `${KEY}`, `${KEY:-default}`; not `${KEY:+yes}` or `${KEY:?unset}`
# (whether it is set), `${KEY//?/*}` (a mask) or `${#KEY}` (a length)
_READ = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?![\w/]|:?[+?])|([A-Za-z_]\w*))")
# `$( ... )` and backticks: what the command prints, not the value read inside it
# (`HAVE=$([ -n "$HF_TOKEN" ] && echo yes)`, `HASH=$(printf %s "$HF_TOKEN" | sha256sum)`)
_SUBSTITUTION = re.compile(r"\$\((?!\()(?:[^()]|\([^()]*\))*\)|`[^`]*`")


def secret_holders(shell) -> frozenset:
    """The variables of a script that hold a secret: each secret-named one (is_secret) that the script does
    not build only from public names (built_from_public), and every variable whose value reads one of
    them, followed through copies of copies (`AUTH="Bearer ${HF_TOKEN}"`, `ARGS=(--token "$HF_TOKEN")`).
    One walk over "read by" edges, once per script: a chain of 10,000 copies stays linear."""
    def walk():
        seen: dict = {}
        names = {a.name for a in shell.assignments} | {e.name for e in shell.expansions}
        seeds = {name for name in names if is_secret(name) and not built_from_public(shell, name, seen)
                 and not placeholder_only(shell, name)}
        return frozenset(copies(shell, seeds))
    return shell.once("secret holders", walk)


def copies(shell, seeds) -> set:
    """`seeds` and every variable whose assigned value reads one of them, through copies of copies. The
    order of assignments is not read: a variable once given a secret's value counts as holding it."""
    readers: dict[str, set] = {}
    for assignment in shell.assignments:
        value = _SUBSTITUTION.sub("", assignment.raw.split("=", 1)[-1])
        for braced, plain in _READ.findall(value):
            readers.setdefault(braced or plain, set()).add(assignment.name)
    tainted, todo = set(seeds), list(seeds)
    while todo:
        for reader in readers.get(todo.pop(), ()):
            if reader not in tainted:
                tainted.add(reader)
                todo.append(reader)
    return tainted
