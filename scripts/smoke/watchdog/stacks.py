"""faulthandler's dump of a rank's Python stacks, read into what the judge needs: the main thread's
top frames and whether it sits inside a torch.distributed collective (and which).

faulthandler (CPython 3.8-3.13, Modules/faulthandler.c and Python/traceback.c) writes, per thread:
    Thread 0x00007f... (most recent call first):          ("Current thread 0x..." for one of them)
      File "/path/file.py", line 12 in function
and a blank line between threads. Text from a rank is untrusted: bounded, never evaluated.
"""
from __future__ import annotations

import re

HEADER = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
FRAME = re.compile(r'^\s+File "(?P<file>[^"\n]{1,1024})", line (?P<line>\d{1,9}) in (?P<func>\S{1,256})')
MAX_THREADS, MAX_FRAMES, TOP = 256, 512, 6

# The collectives a rank can block in from Python: torch.distributed's functions
# (torch/distributed/distributed_c10d.py); the first one from the top is the one it waits in.
C10D_FILE = "torch/distributed/distributed_c10d.py"
WRAPPERS = {"wrapper", "_wait", "__call__"}
CUDA_WAIT = {("torch/cuda/__init__.py", "synchronize"), ("torch/cuda/streams.py", "synchronize"),
             ("torch/cuda/streams.py", "wait_event")}


def parse_dump(text: str) -> dict | None:
    """The last complete dump in text (a file a rank appends to): its main thread, classified."""
    threads: list[list[tuple[str, int, str]]] = []
    current: list[tuple[str, int, str]] | None = None
    for line in text.splitlines()[-20000:]:
        if HEADER.match(line):
            if len(threads) >= MAX_THREADS:
                threads.pop(0)
            current = []
            threads.append(current)
            continue
        match = FRAME.match(line)
        if match and current is not None and len(current) < MAX_FRAMES:
            current.append((match["file"], int(match["line"]), match["func"]))
    if not threads:
        return None
    main = main_thread(threads)
    return {"threads": len(threads), **classify(main)}


def main_thread(threads: list[list[tuple[str, int, str]]]) -> list[tuple[str, int, str]]:
    """The thread that runs the program: its bottom frame is the program's module or runpy's entry;
    threading's threads end in _bootstrap. The last dump's threads only (a file holds several)."""
    for frames in reversed(threads):
        if frames and frames[-1][2] in ("<module>", "_run_module_as_main", "_run_code", "main"):
            return frames
    for frames in reversed(threads):
        if frames and frames[-1][2] != "_bootstrap":
            return frames
    return threads[-1]


def short(path: str) -> str:
    return "/".join(path.split("/")[-2:])


def in_torch(path: str) -> bool:
    return "/torch/" in path or path.startswith("torch/")


def classify(frames: list[tuple[str, int, str]]) -> dict:
    """where: "collective" (op named), "cuda-wait" or "outside"; top: the top frames, as text.

    From the innermost frame out, through torch's own frames only: a rank waits in a collective
    when nothing but torch lies between the collective and the top of its stack. Code of its own
    above the collective (a signal handler, a hook run from inside it) means the rank is running
    that code, not waiting: outside (seen in the hang matrix: a handler spinning on top of
    all_reduce's frame, which had been read as waiting)."""
    top = [f"{func} ({short(file)}:{line})" for file, line, func in frames[:TOP]]
    for file, _line, func in frames[:40]:
        if file.endswith(C10D_FILE) and func not in WRAPPERS and not func.startswith("_"):
            return {"where": "collective", "op": func, "top": top}
        for wait_file, wait_func in CUDA_WAIT:
            if file.endswith(wait_file) and func == wait_func:
                return {"where": "cuda-wait", "op": func, "top": top}
        if not in_torch(file):
            break
    return {"where": "outside", "op": None, "top": top}
