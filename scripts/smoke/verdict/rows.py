"""The verdict's rows: one typed contract for every section, and how they print."""
from __future__ import annotations

from dataclasses import dataclass

from smoke.vocab import FAIL, PASS, SEVERITY, WARN

MAX_CHECK = 120  # characters of a check's name (it carries a host name: bounded, an 8 MiB one is cut)
MAX_DETAIL = 600


def clip(text, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Row:
    check: str
    state: str  # PASS, WARN or FAIL
    detail: str

    def __post_init__(self):
        if self.state not in SEVERITY:
            raise ValueError(f"row state {self.state!r}")
        object.__setattr__(self, "check", clip(self.check, MAX_CHECK))
        object.__setattr__(self, "detail", clip(self.detail, MAX_DETAIL))


def overall(rows: list[Row]) -> str:
    """The worst state; FAIL when nothing was judged at all."""
    if not rows:
        return FAIL
    return max((r.state for r in rows), key=SEVERITY.__getitem__)


def printable(text) -> str:
    """Text from the run folder as a terminal shows it safely: control characters (line breaks, CR,
    ESC), other non-printable and lone surrogates escaped, never interpreted; ASCII only, so printing
    cannot fail whatever the terminal's encoding."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if 0x20 <= code < 0x7F:
            out.append(ch)
        elif ch.isprintable() and not 0xD800 <= code <= 0xDFFF:
            out.append(ch.encode("ascii", "backslashreplace").decode("ascii"))
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


__all__ = ["FAIL", "PASS", "WARN", "Row", "clip", "overall", "printable"]
