"""Fit the memory estimator's coefficients from a phase-by-phase calibration run.

scripts/calibrate_memory.py --set fit records, for small GPT models that change one dimension at a
time at 2 and 4 layers, the allocated bytes between the phases of a training step. This module turns
those rows into the coefficients that validator/planner.py uses (`python3 -m validator.memory_fit
docs/calibration/h200-fit-set.json` prints them), each by least squares over the rows that isolate
it. Pure Python: no numpy needed to re-check a fit.

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
    backward_sbv: float  # transient at the start of the backward pass, per s*b*V
    backward_sbh: float  # transient at the start of the backward pass, per s*b*h
    backward_scores: float  # transient of one unfused attention backward, per a*s^2*b
    backward_scores_selective: float  # the same when the attention forward is recomputed first
    backward_scores_freed_sbv: float  # what the loss has freed by then, per s*b*V
    static_scores_buffer: float  # Megatron's persistent score buffer (unfused), per a*s^2*b
    static_other: float  # bytes beyond 18 per parameter that stay allocated (RoPE cache, masks)
    torch_adamw_step: float  # transient of torch's foreach AdamW step, per parameter of the shard
    fused_adam_step: float  # transient of a fused Adam step, per parameter of the shard


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
    measured = {r["name"]: r for r in rows if "bytes" in r}

    def phase(row, key):
        return row["bytes"][key]

    def forward(row):
        return phase(row, "after_forward") - phase(row, "static")

    def backward_extra(row):
        return phase(row, "peak_backward") - phase(row, "after_forward")

    shapes = sorted({n.split("-L")[0] for n in measured if "-L2-flash" in n})
    pairs = [(measured[f"{sh}-L2-flash"], measured[f"{sh}-L4-flash"]) for sh in shapes
             if f"{sh}-L4-flash" in measured]
    # 1. per-layer saved activations without scores: the slope from 2 to 4 layers, flash attention
    per_layer = [(l4, (forward(l4) - forward(l2)) / 2) for l2, l4 in pairs]
    c_sbh, c_sbkv, c_sbf = _solve([[dims(r)[k] for k in ("sbh", "sbkv", "sbf")] for r, _ in per_layer],
                                  [y for _, y in per_layer])

    def layer_linear(row):
        d = dims(row)
        return c_sbh * d["sbh"] + c_sbkv * d["sbkv"] + c_sbf * d["sbf"]

    # 2. the score term: unfused slope minus the same layer's linear part
    unfused = [(measured[f"{sh}-L2-unfused"], measured[f"{sh}-L4-unfused"]) for sh in shapes
               if f"{sh}-L2-unfused" in measured and f"{sh}-L4-unfused" in measured]
    (c_scores,) = _solve([[dims(l4)["scores"]] for _, l4 in unfused],
                         [(forward(l4) - forward(l2)) / 2 - layer_linear(l4) for l2, l4 in unfused])
    # 3. saved once per model: what is left at 2 layers
    c_once_v, c_once_h = _solve([[dims(l2)["sbv"], dims(l2)["sbh"]] for l2, _ in pairs],
                                [forward(l2) - 2 * layer_linear(l2) for l2, _ in pairs])
    # 4. transient at the start of the backward pass (flash: no score term)
    flash = [r for n, r in measured.items() if n.endswith("-flash") and "-L" in n]
    c_bwd_v, c_bwd_h = _solve([[dims(r)["sbv"], dims(r)["sbh"]] for r in flash],
                              [backward_extra(r) for r in flash])

    def residual(row):
        d = dims(row)
        return backward_extra(row) - c_bwd_v * d["sbv"] - c_bwd_h * d["sbh"]

    # 5. one unfused attention backward, less what the loss has freed by then (rows where it shows)
    shows = [r for n, r in measured.items() if n.endswith("-unfused") and residual(r) > 0.05 * backward_extra(r)]
    c_bwd_scores, c_freed = _solve([[dims(r)["scores"], -dims(r)["sbv"]] for r in shows], [residual(r) for r in shows])
    selective = [r for n, r in measured.items() if n.endswith("-unfused-selective")]
    (c_bwd_sel,) = _solve([[dims(r)["scores"]] for r in selective],
                          [residual(r) + c_freed * dims(r)["sbv"] for r in selective])
    # 6. static bytes beyond 18 per parameter
    flash_static = [phase(r, "static") - STATIC_BYTES_PER_PARAM * r["params"] for r in flash]
    static_other = mean(flash_static)
    unfused_rows = [r for n, r in measured.items() if n.endswith("-unfused") and "-L" in n]
    (c_buffer,) = _solve([[dims(r)["scores"]] for r in unfused_rows],
                         [phase(r, "static") - STATIC_BYTES_PER_PARAM * r["params"] - static_other for r in unfused_rows])
    # 7. optimizer step transients
    def step(kind):
        rs = [r for n, r in measured.items() if n.startswith("opt-") and r["optimizer"] == kind]
        return mean((phase(r, "peak_step") - phase(r, "static")) / r["params"] for r in rs) if rs else float("nan")

    return Coefficients(c_sbh, c_sbkv, c_sbf, c_scores, c_once_v, c_once_h, c_bwd_v, c_bwd_h, c_bwd_scores,
                        c_bwd_sel, c_freed, c_buffer, static_other, step("torch"), step("fused"))


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
            verdict = "yes" if est.allocated_gib > data["gpu_gib"] else "NO"
            lines.append(head + f"| out of memory ({data['gpu_gib']} GiB) | | {est.allocated_gib:.1f} "
                                f"| predicts OOM: {verdict} |")
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
        print(f"{argv[-1]}: not a calibration file from scripts/calibrate_memory.py "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
