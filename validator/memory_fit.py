"""Fit the memory estimator's coefficients from a phase-by-phase calibration run.

docs/calibration/h200-pretrain-gpt-fit.json records, for small GPT models that change one dimension at
a time at 2 and 4 layers, the allocated bytes between the phases of a training step of Megatron-LM's
pretrain_gpt.py (bench/pretrain_gpt/). This module turns those rows into the coefficients that
validator/planner.py uses (`python3 -m validator.memory_fit docs/calibration/h200-pretrain-gpt-fit.json`
prints them), each by least squares over the rows that isolate it. Pure Python: no numpy needed to
re-check a fit.

Names: s sequence, b micro-batch, h hidden, f FFN hidden, kv = query groups x head dim, a heads,
V vocabulary, P parameters; sbh = s*b*h and so on, all in bytes per element.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from statistics import mean

from validator.planner import estimate_memory, plan, shape_terms

VOCAB = 32000
STATIC_BYTES_PER_PARAM = 18  # bf16 weights 2 + fp32 gradient buffer 4 + fp32 master weights and Adam 12


@dataclass
class Coefficients:
    layer_sbh: float  # saved per layer, per s*b*h
    layer_sbkv: float  # saved per layer, per s*b*kv (K and V before any expansion)
    layer_sbf: float  # saved per layer, per s*b*ffn
    layer_scores: float  # saved per layer, per a*s^2*b, unfused attention only
    once_sbv: float  # saved once per model (logits and loss), per s*b*V
    once_sbh: float  # saved once per model (embedding output, final norm), per s*b*h
    full_sbh: float  # saved per layer under full recompute (the layer's input), per s*b*h
    backward_sbv: float  # transient at the start of the backward pass, per s*b*V
    backward_sbh: float  # transient at the start of the backward pass, per s*b*h
    backward_scores: float  # one unfused attention backward without recompute, per a*s^2*b (0: never the peak)
    backward_scores_selective: float  # the same when the attention forward is recomputed first
    backward_scores_full: float  # the same on top of a recomputed layer (full recompute)
    backward_scores_freed_sbv: float  # what the loss's backward has freed by then, per s*b*V
    static_scores_buffer: float  # Megatron's persistent score buffer (unfused), per a*s^2*b
    static_other: float  # bytes beyond 18 per parameter that stay allocated (RoPE cache, masks)
    torch_adamw_step: float  # transient of torch's foreach AdamW step, per parameter of the shard
    fused_adam_step: float  # transient of a fused Adam step, per parameter of the shard (nan: no rows)


def _solve(rows: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares through the normal equations (a handful of unknowns, well-conditioned after
    scaling each column)."""
    n = len(rows[0])
    scale = [max(abs(r[j]) for r in rows) or 1.0 for j in range(n)]
    x = [[r[j] / scale[j] for j in range(n)] for r in rows]
    ata = [[sum(xr[i] * xr[j] for xr in x) for j in range(n)] for i in range(n)]
    aty = [sum(xr[i] * y for xr, y in zip(x, ys)) for i in range(n)]
    for col in range(n):  # Gauss-Jordan with partial pivoting
        pivot = max(range(col, n), key=lambda r: abs(ata[r][col]))
        if abs(ata[pivot][col]) < 1e-12:
            raise ValueError("these rows cannot separate the coefficients (a singular system)")
        ata[col], ata[pivot] = ata[pivot], ata[col]
        aty[col], aty[pivot] = aty[pivot], aty[col]
        for r in range(n):
            if r != col:
                factor = ata[r][col] / ata[col][col]
                ata[r] = [a - factor * c for a, c in zip(ata[r], ata[col])]
                aty[r] -= factor * aty[col]
    return [aty[i] / ata[i][i] / scale[i] for i in range(n)]


def dims(row: dict) -> dict:
    """The planner's element counts for a calibration row (its exact vocabulary, no padding)."""
    return shape_terms(manifest_for(row, 0.0)["model"], row.get("vocab", VOCAB))


def fit(rows: list[dict]) -> Coefficients:
    """Rows named <shape>-L2/-L4-unfused[-selective|-full] (unfused attention: every term shows)
    and, optionally, opt-* rows for the optimizer steps (docs/memory-calibration.md)."""
    measured = {r["name"]: r for r in rows if "bytes" in r}

    def phase(row, key):
        return row["bytes"][key]

    def forward(row):
        return phase(row, "after_forward") - phase(row, "static")

    def backward_extra(row):
        return phase(row, "peak_backward") - phase(row, "after_forward")

    def pairs(suffix):
        shapes = sorted({n.split("-L")[0] for n in measured if n.endswith(f"-L2-unfused{suffix}")})
        return [(measured[f"{sh}-L2-unfused{suffix}"], measured[f"{sh}-L4-unfused{suffix}"]) for sh in shapes
                if f"{sh}-L4-unfused{suffix}" in measured]

    plain = pairs("")
    # 1. per-layer saved activations: the slope from 2 to 4 layers, every term at once
    terms = ("sbh", "sbkv", "sbf", "scores")
    c_sbh, c_sbkv, c_sbf, c_scores = _solve([[dims(l4)[k] for k in terms] for _, l4 in plain],
                                            [(forward(l4) - forward(l2)) / 2 for l2, l4 in plain])

    def layer_linear(row):
        d = dims(row)
        return c_sbh * d["sbh"] + c_sbkv * d["sbkv"] + c_sbf * d["sbf"]

    def layer(row):
        return layer_linear(row) + c_scores * dims(row)["scores"]

    # 2. saved once per model: what is left at 2 layers
    c_once_v, c_once_h = _solve([[dims(l2)["sbv"], dims(l2)["sbh"]] for l2, _ in plain],
                                [forward(l2) - 2 * layer(l2) for l2, _ in plain])
    # 3. full recompute keeps each layer's input: its slope from 2 to 4 layers, per s*b*h
    full = pairs("-full")
    (c_full,) = _solve([[dims(l4)["sbh"]] for _, l4 in full], [(forward(l4) - forward(l2)) / 2 for l2, l4 in full])
    # 4. transient when the backward pass starts (the logits' gradient), from rows without recompute
    none = [r for l2, l4 in plain for r in (l2, l4)]
    c_bwd_v, c_bwd_h = _solve([[dims(r)["sbv"], dims(r)["sbh"]] for r in none], [backward_extra(r) for r in none])

    def residual(row):
        d = dims(row)
        return backward_extra(row) - c_bwd_v * d["sbv"] - c_bwd_h * d["sbh"]

    # 5. a later peak: the last layer's attention backward (after its recompute), once the loss's
    #    backward has freed part of the logits. Rows where it shows: F[recompute] * scores - freed * sbv
    #    (+ the recomputed layer under full recompute).
    kinds = {"none": [r for r in none], "selective": [r for p in pairs("-selective") for r in p],
             "full": [r for p in full for r in p]}
    shows = {k: [r for r in rs if residual(r) > 0.05 * backward_extra(r)] for k, rs in kinds.items()}
    names = [k for k in ("none", "selective", "full") if shows[k]]
    rows_x, ys = [], []
    for k in names:
        for r in shows[k]:
            d = dims(r)
            rows_x.append([d["scores"] if k == kk else 0.0 for kk in names] + [-d["sbv"]])
            ys.append(residual(r) - (layer(r) if k == "full" else 0.0))
    solved = _solve(rows_x, ys) if rows_x else [0.0]
    factors = dict(zip(names, solved[:-1]))
    c_freed = solved[-1]
    # 6. static bytes beyond 18 per parameter: the score buffer (unfused) and a constant
    unfused = [r for l2, l4 in plain for r in (l2, l4)]
    c_buffer, static_other = _solve([[dims(r)["scores"], 1.0] for r in unfused],
                                    [phase(r, "static") - STATIC_BYTES_PER_PARAM * r["params"] for r in unfused])

    return Coefficients(c_sbh, c_sbkv, c_sbf, c_scores, c_once_v, c_once_h, c_full, c_bwd_v, c_bwd_h,
                        factors.get("none", 0.0), factors.get("selective", 0.0), factors.get("full", 0.0), c_freed,
                        c_buffer, static_other, step_transient(rows, "torch"), step_transient(rows, "fused"))


def step_transient(rows: list[dict], kind: str) -> float:
    """The optimizer step's transient per parameter: from opt-* rows where present, else from every
    row of that optimizer (least squares through the origin); nan without rows."""
    measured = [r for r in rows if "bytes" in r and r.get("optimizer") == kind]
    rs = [r for r in measured if r["name"].startswith("opt-")] or [r for r in measured if "-L" in r["name"]]
    if not rs:
        return float("nan")
    return sum((r["bytes"]["peak_step"] - r["bytes"]["static"]) * r["params"] for r in rs) / sum(r["params"] ** 2 for r in rs)


def manifest_for(row: dict, gpu_gib: float) -> dict:
    """The manifest a calibration row corresponds to (one GPU, TP = PP = DP = 1)."""
    return {"topology": {"gpu": {"memory_gib": gpu_gib, "per_node": 1}},
            "model": {"num_layers": row["layers"], "hidden_size": row["hidden"], "ffn_hidden_size": row["ffn"],
                      "num_attention_heads": row["heads"], "num_query_groups": row["groups"],
                      "seq_length": row["seq"], "vocab_size": row.get("vocab", VOCAB), "micro_batch_size": row["micro"],
                      "grad_accum_steps": 1, "attention": row["attention"], "recompute": row["recompute"],
                      "optimizer": row["optimizer"]},
            "parallelism": {"tensor": 1, "pipeline": 1}}


def preset_rows(root) -> list[dict]:
    """The calibration configuration of each preset's own model (presets/*/preset.yaml), the inverse
    of manifest_for: TP = PP = DP = 1, the vocabulary as pretrain_gpt.py builds it (NullTokenizer's
    end-of-document token, padded to a multiple of 128). Named preset-NAME; a new preset is found here."""
    from validator.catalog import manifests
    from validator.planner import padded_vocab

    rows = []
    for name, manifest in manifests(root).items():
        m = manifest["model"]
        rows.append({"name": f"preset-{name}", "layers": m["num_layers"], "hidden": m["hidden_size"],
                     "ffn": m["ffn_hidden_size"], "heads": m["num_attention_heads"], "groups": m["num_query_groups"],
                     "seq": m["seq_length"], "micro": m["micro_batch_size"], "attention": m["attention"],
                     "optimizer": m.get("optimizer", "fused"), "recompute": m["recompute"],
                     "vocab": padded_vocab(m["vocab_size"], 1)})
    return rows


def table(data: dict) -> str:
    """The Markdown table of docs/memory-calibration.md for one calibration file."""
    lines = ["| config | L/h/ffn/a/g | s x b, V | attention, recompute, Adam | params | measured max allocated GiB "
             "| reserved GiB | estimate GiB | error |", "|---|---|---|---|---|---|---|---|---|"]
    errors = []
    for r in data["rows"]:
        est = estimate_memory(manifest_for(r, data["gpu_gib"]), plan(1, 1, r["heads"], r["groups"], r["micro"], 1, 1, 1),
                              pad_vocab=False)
        head = (f"| {r['name']} | {r['layers']}/{r['hidden']}/{r['ffn']}/{r['heads']}/{r['groups']} "
                f"| {r['seq']} x {r['micro']}, {r.get('vocab', VOCAB) // 1000}k "
                f"| {r['attention']}, {r['recompute']}, {r['optimizer']} | {est.params_total / 1e9:.2f}B ")
        if "bytes" in r:
            errors.append(100 * (est.allocated_gib / r["max_allocated_gib"] - 1))
            lines.append(head + f"| {r['max_allocated_gib']:.1f} | {r['max_reserved_gib']:.1f} "
                                f"| {est.allocated_gib:.1f} | {errors[-1]:+.1f}% |")
        else:
            verdict = "yes" if not est.fits else "NO"
            lines.append(head + f"| out of memory ({data['gpu_gib']} GiB) | | {est.allocated_gib:.1f} "
                                f"| plan says does not fit: {verdict} |")
    magnitudes = sorted(abs(e) for e in errors)
    lines.append("")
    lines.append(f"Worst error {max(errors, key=abs):+.1f}%, median |error| {magnitudes[len(magnitudes) // 2]:.1f}%, "
                 f"over {len(errors)} measured rows.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or (len(argv) == 2 and argv[0] != "--table"):
        print("usage: python3 -m validator.memory_fit [--table] CALIBRATION.json", file=sys.stderr)
        return 2
    try:
        with open(argv[-1], encoding="utf-8") as fh:
            data = json.load(fh)
        output = table(data) if argv[0] == "--table" else "\n".join(
            f"{name:28s} {value:14.4f}" for name, value in asdict(fit(data["rows"])).items())
    except OSError as exc:
        print(f"{argv[-1]}: cannot read: {exc.strerror}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as exc:
        print(f"{argv[-1]}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
        print(f"{argv[-1]}: not a calibration file from bench/calibrate_memory.py "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
