"""pyxis images: 'registry#path:tag' (not 'registry/path', which goes to Docker Hub), a pinned tag (not latest), local .sqsh paths starting with / or .

Premise (pyxis and enroot, not Slurm): a .sqsh path that does not start with / or . is taken for a
registry image and sent to Docker Hub (pyxis#67), in every release; enroot before 4.0 reads only
'registry#path' and sends 'registry/path' to Docker Hub; an unpinned tag changes under the job, a
policy for our presets (strict profile), not a defect in somebody else's script. Holds for: every Slurm release; the pyxis versions named in the module.
An unquoted `~/img.sqsh` that starts its own word is $HOME's absolute path by the time srun reads it (bash's tilde
expansion): not reported; glued after '=' or quoted, the `~` reaches pyxis and is.
"""
import re

from validator.rules.base import image_uses
ID = "pyxis-image"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("pyxis images: local .sqsh paths starting with / or .; strict profile: a pinned tag (not latest) "
               "and 'registry#path:tag', the only form enroot before 4.0 reads")
GOOD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --container-image=ghcr.io#org/img:1.2 true\n"}
BAD = {"run.sbatch": "#!/bin/bash\n# validator: spank=pyxis\n#SBATCH --time=00:10:00\nset -euo pipefail\nsrun --kill-on-bad-exit=1 --container-image=images/app.sqsh true\n"}


# enroot 4.0.0 (NVIDIA/enroot f29a45c, src/docker.sh docker::_parse_uri) also reads Docker's
# 'registry/path:tag' when the first part has a '.' or ':'; enroot 3.x reads only 'registry#path' and
# sends 'registry/path' to Docker Hub as a namespace (401). Presets target both; other scripts'
# clusters most likely run enroot 4, so the default profile accepts the slash form.
SLASH_FORM_OK_SINCE = "4.0.0"


def problems(value, strict=True):
    if value.endswith(".sqsh"):
        if not value.startswith(("/", ".")):
            yield f"local image '{value}' must start with '/' or '.', or pyxis sends it to Docker Hub"
        return
    if "#" not in value and strict:
        first = value.split("/")[0]
        if "." in first or ":" in first:
            yield (f"'{value}' uses '/' after the registry: enroot before {SLASH_FORM_OK_SINCE} asks Docker Hub for it; "
                   f"write '{first}#{value[len(first) + 1:]}'")
    tail = value.split("#")[-1].split("/")[-1]
    if "@sha256:" in tail or not strict:  # an unpinned tag runs what its author named: pinning is a policy
        return
    if ":" not in tail:
        yield f"'{value}' has no tag; pin a tag or digest"
    elif tail.endswith(":latest"):
        yield f"'{value}' uses ':latest'; pin a tag or digest"


def check(target):
    lines = target.script.lines
    for word, _ in image_uses(target.script.shell):
        if word.value is None or _tilde_expanded(word, lines):
            continue
        for message in problems(word.value, target.strict):
            yield (target.script.display, word.line, word.col, message)
    for option in target.script.parsed.get("container-image"):
        for message in problems(option.value or "", target.strict):
            yield (target.script.display, option.line, option.col, message)


# bash's tilde-prefix: `~` and the unquoted characters up to the first unquoted slash (or the word's end)
_TILDE_PREFIX = re.compile(r"~[\w.-]*(?:/|$)")


def _tilde_expanded(word, lines) -> bool:
    """`--container-image ~/pytorch.sqsh`: bash expands an unquoted `~` that starts a word (bash(1), Tilde Expansion),
    so pyxis gets $HOME's absolute path (round 564's Generative-NLI job). Not glued after '=' (`--container-image=~/x`:
    no assignment, bash leaves the `~`; bash 5.2 here) and not quoted: there pyxis gets '~/...' and asks Docker Hub."""
    if not _TILDE_PREFIX.match(word.raw):
        return False  # `~"/img.sqsh"`: a quoted character in the tilde-prefix, bash expands nothing (bash 5.2 here)
    text = lines[word.line - 1] if 0 < word.line <= len(lines) else ""
    return not (1 < word.col <= len(text) + 1 and text[word.col - 2] == "=")
