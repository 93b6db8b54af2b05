"""Score the verdict on a corpus of real log excerpts (issue 27): how many it reads right.

    .venv/bin/python bench/verdict_real_logs.py --corpus DIR --split tuning|held-out|all [--out FILE.tsv]

DIR holds INDEX.tsv (the columns of docs/verdict-real-logs.tsv: id, source, class, truth, node, rank,
expected_verdict, held_out) and logs/<id>.log. The logs are other people's text and stay outside the
repository; docs/verdict-real-logs.tsv is this project's index of the corpus it was measured on.
Each excerpt is put in a run folder the way tests/test_verdict.py builds one, by class:
  train  - stages.txt "preflight 0 / megatron <0|1>", the excerpt as megatron.log, the ethernet-only preset
           with its TFLOP/s floor at 0 (the excerpts come from unknown GPUs); exit 1 when it shows a crash
  stage  - stages.txt "preflight 0 / megatron 1" (0 when its truth is not a failure), the excerpt as megatron.log
  pyxis  - stages.txt "preflight 1", the excerpt as preflight.log, mode container-functional
  probe  - stages.txt "preflight 0 / probe 0", the healthy 2-node probe.json fixture and the excerpt as
           probe.log, preset h100-ib-8port (roce for RoCE): the 'transport' row is judged
then the verdict runs on it. An item reads right when the state matches the expected verdict, the cause
of its class is named, and the node and rank the index gives appear in what it said. Prints the score,
false PASSes and crashes; the per-item table goes to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from smoke.verdict.main import main as verdict_main  # the .venv of `make validate` has the package

PLACEMENT = {
    "healthy": "train", "nan-loss": "train", "all-skipped": "train", "fp16-warmup-skips": "train",
    "loss-diverging": "train",
    "transport-ib": "probe", "transport-roce": "probe", "transport-efa": "probe", "transport-socket": "probe",
    "transport-unknown": "probe",
    "container-node": "pyxis", "container-image": "pyxis", "image-pull": "pyxis",
}
# what the verdict must name for the class (searched in every row it wrote), and what it must not say
CAUSE = {
    "nan-loss": r"\bNaN\b|non-finite|not finite",
    "all-skipped": r"skipped|overflow|loss scale",
    "fp16-warmup-skips": r"skipped|loss scale|warm",
    "loss-diverging": r"\bloss\b",
    "cuda-oom": r"CUDA out of memory|GPU memory|OutOfMemory",
    "nccl-watchdog": r"[Ww]atchdog|collective .{0,40}tim",
    "signal": r"SIG[A-Z]{2,6}|signal",
    "torchrun-rootcause": r"rank \d+",
    "rdzv-unreachable": r"rendezvous|store|MASTER_ADDR",
    "rdzv-timeout": r"rendezvous",
    "slurm-timelimit": r"time limit",
    "slurm-oom": r"host memory|oom-kill|memory limit|--mem",
    "slurm-mem-warning": r"memory",
    "slurm-preempt": r"preempt",
    "slurm-requeue": r"requeue",
    "srun-task-died": r"Bus error|Segmentation fault|Killed|Aborted",
    "srun-task-exit": r"tasks? \d",
    "nccl-ib-error": r"\bIB\b|InfiniBand|ibv_|completion|RDMA",
    "nccl-net-error": r"OFI|[Ll]ibfabric|EFA|fi_getinfo",
    "container-node": r"node",
    "container-image": r"image",
    "image-pull": r"pull|registry|401|404|429|credential|manifest",
    "gpu-hardware": r"ECC|Xid|fallen off|GPU .{0,30}(lost|unreachable|fault|failed)|GPU failed|hardware",
    "transport-socket": r"Socket|socket|fallback",
}
FORBID = {"container-node": r"image .{0,40}may be broken"}


NO_FLOOR = "ethernet-only-no-floor"  # the excerpts come from unknown GPUs: no TFLOP/s floor applies


def preset_dir(preset: str, scratch: str) -> str:
    """The repository's preset, or for NO_FLOOR a copy of ethernet-only without its TFLOP/s floor."""
    if preset != NO_FLOOR:
        return os.path.join(ROOT, "presets", preset)
    target = os.path.join(scratch, preset)
    if not os.path.isdir(target):
        shutil.copytree(os.path.join(ROOT, "presets", "ethernet-only"), target)
        path = os.path.join(target, "preset.yaml")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        # text edit, not a YAML round trip: the validator reads the file as written
        text, count = re.subn(r"\n  megatron_tflops_per_gpu:\n(?:    [^\n]{0,400}\n){1,12}", "\n", text)
        assert count == 1, "ethernet-only preset: no megatron_tflops_per_gpu block"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return target


def build(run: str, item: dict, text: str) -> tuple[str, str]:
    """Fill the run folder; returns (preset, mode)."""
    place = PLACEMENT.get(item["class"], "stage")
    fixtures = os.path.join(ROOT, "tests", "fixtures", "runtime")
    def write(name, content):
        with open(os.path.join(run, name), "w", encoding="utf-8") as handle:
            handle.write(content)
    if place == "train":
        crashed = re.search(r"Traceback \(most recent call last\)|^\S*(Error|Exception): ", text, re.M) is not None
        write("stages.txt", f"preflight 0\nmegatron {1 if crashed else 0}\n")
        write("megatron.log", text)
        return NO_FLOOR, "full"
    if place == "probe":
        write("stages.txt", "preflight 0\nprobe 0\n")
        shutil.copy(os.path.join(fixtures, "probe-2node-healthy.json"), os.path.join(run, "probe.json"))
        write("probe.log", text)
        return ("roce" if item["class"] == "transport-roce" else "h100-ib-8port"), "full"
    if place == "pyxis":
        write("stages.txt", "preflight 1\n")
        write("preflight.log", text)
        return "ethernet-only", "container-functional"
    # a run that ended (its truth is not a failure) exits 0; a failure exits 1
    write("stages.txt", f"preflight 0\nmegatron {1 if item['expected_verdict'] == 'FAIL' else 0}\n")
    write("megatron.log", text)
    return "ethernet-only", "full"


def judge(item: dict, result: dict | None, crash: str | None) -> tuple[str, str, bool]:
    if crash:
        return "CRASH", crash, False
    rows = result["checks"]
    said = " | ".join(f"{r['check']}: {r['state']} {r['detail']}" for r in rows if r["state"] != "PASS")
    place = PLACEMENT.get(item["class"], "stage")
    if place == "probe":
        transport = [r for r in rows if r["check"] == "transport"]
        state = transport[0]["state"] if transport else "none"
        said = " | ".join(f"{r['check']}: {r['state']} {r['detail']}" for r in transport) or "no transport row"
    else:
        state = result["verdict"]
    said_all = " | ".join(f"{r['check']}: {r['state']} {r['detail']}" for r in rows)
    ok = state == item["expected_verdict"]
    if item["class"] == "transport-efa":
        # no preset has an EFA fabric: the item is read right when the plugin's whole name is read (the
        # transport row then fails on an InfiniBand preset, which is right for that topology)
        ok = re.search(r"Libfabric", said) is not None and not re.search(r"used AWS on", said)
    cause = CAUSE.get(item["class"])
    if ok and cause and item["expected_verdict"] != "PASS":
        ok = re.search(cause, said_all) is not None
    forbid = FORBID.get(item["class"])
    if ok and forbid and re.search(forbid, said_all):
        ok = False
    if ok and item["node"] != "-" and item["node"].split(".")[0].lower() not in said_all.lower():
        ok = False
    # a rank is named as "rank N" (torch, NCCL, DeepSpeed) or as srun's "task N" (one task per GPU)
    if ok and item["rank"] != "-" and not re.search(rf"\b(?:rank|task) {re.escape(item['rank'])}\b", said_all):
        ok = False
    return f"{result['verdict']} ({state})", said[:600].replace("\t", " ").replace("\n", " "), ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="folder with INDEX.tsv and logs/")
    parser.add_argument("--split", choices=("tuning", "held-out", "all"), default="tuning")
    parser.add_argument("--out", help="per-item table (TSV)")
    args = parser.parse_args(argv)
    index = os.path.join(args.corpus, "INDEX.tsv")
    if not os.path.isfile(index):
        print(f"verdict_real_logs: no {index}", file=sys.stderr)
        return 2
    with open(index, encoding="utf-8") as handle:
        header, *lines = [l.rstrip("\n").split("\t") for l in handle if l.strip()]
    items = [dict(zip(header, l)) for l in lines]
    if args.split != "all":
        want = "yes" if args.split == "held-out" else "no"
        items = [i for i in items if i["held_out"] == want]
    scratch = tempfile.mkdtemp(prefix="v27-presets-")
    out, correct = ["id\tclass\texpected\tverdict_said\tdetail\tcorrect"], 0
    for item in items:
        with open(os.path.join(args.corpus, "logs", item["id"] + ".log"), encoding="utf-8", errors="replace") as h:
            text = h.read()
        run = tempfile.mkdtemp(prefix="v27-")
        crash, result = None, None
        try:
            preset, mode = build(run, item, text)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                verdict_main(["--run-dir", run, "--preset", preset_dir(preset, scratch), "--mode", mode])
            with open(os.path.join(run, "verdict.json"), encoding="utf-8") as h:
                result = json.load(h)
        except BaseException as exc:  # noqa: BLE001 - a crash is a result here
            crash = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            shutil.rmtree(run, ignore_errors=True)
        said, detail, ok = judge(item, result, crash)
        correct += ok
        out.append("\t".join([item["id"], item["class"], item["expected_verdict"], said, detail, "yes" if ok else "no"]))
    shutil.rmtree(scratch, ignore_errors=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(out) + "\n")
    false_pass = sum(1 for l in out[1:] if l.split("\t")[3].startswith("PASS") and l.split("\t")[2] != "PASS")
    print(f"{args.split}: {correct}/{len(items)} read correctly ({100 * correct / max(1, len(items)):.0f} %), "
          f"false PASS {false_pass}, crashes {sum(1 for l in out[1:] if l.split(chr(9))[3] == 'CRASH')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
