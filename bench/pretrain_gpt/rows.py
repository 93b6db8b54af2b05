"""Turn drive.py results into calibration rows (the format of bench/calibrate_memory.py).

    python3 bench/pretrain_gpt/rows.py results.json [...] > rows.json
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
from validator.planner import padded_vocab, parameter_count, GIB
from validator.memory_fit import manifest_for

def row_of(r):
    env = r["run"]["env"]
    preset = r["run"].get("preset")
    text = (ROOT / "presets" / preset / "train.sbatch").read_text()
    d = dict(re.findall(r"^export (MEGATRON_\w+)=\$\{\w+:-([^}]*)\}", text, re.M))
    d.update(env)
    vocab = padded_vocab(int(d["MEGATRON_VOCAB_SIZE"]), 1)
    row = {"name": r["name"].removeprefix("mp-"), "layers": int(d["MEGATRON_NUM_LAYERS"]), "hidden": int(d["MEGATRON_HIDDEN_SIZE"]),
           "ffn": int(d["MEGATRON_FFN_HIDDEN_SIZE"]), "heads": int(d["MEGATRON_NUM_ATTENTION_HEADS"]),
           "groups": int(d["MEGATRON_NUM_QUERY_GROUPS"]), "seq": int(d["MEGATRON_SEQ_LENGTH"]),
           "micro": int(d["MEGATRON_MICRO_BATCH_SIZE"]), "attention": "unfused", "optimizer": "torch",
           "recompute": d["MEGATRON_RECOMPUTE"], "vocab": vocab}
    row["megatron_env"] = {k: v for k, v in sorted(env.items())}
    if preset != "ethernet-only" or "MEGATRON_NUM_LAYERS" not in env:
        row["preset"] = preset
    m = r.get("memprobe")
    row["params"] = parameter_count(manifest_for(row, 0)["model"], vocab)
    rep = r.get("megatron_memory_mb")
    if rep:
        row["megatron_report_after_iteration_1_mb"] = {k: round(v, 1) for k, v in rep.items()}
    if m and m["iterations"] and len(m["iterations"]) >= 4 and not r.get("oom"):
        it = m["iterations"][3]  # iteration 4: peaks reset after iteration 3's step
        static = [a for i, a in m["static_at_start"] if i == 3][0]
        after_fwd = [a for (nm, c, ph, a) in m["events"] if nm == "GPTModel" and ph == "forward"][0]
        row["bytes"] = {"static": static, "after_forward": after_fwd, "peak_backward": it["fwd_bwd_peak"],
                        "peak_step": it["step_peak"], "outside_allocator": m["outside_allocator"]}
        row["max_allocated_gib"] = round(m["max_allocated"] / GIB, 3)
        row["max_reserved_gib"] = round(m["max_reserved"] / GIB, 3)
        row["iteration_1_torch_peak_gib"] = round(max(m["iterations"][0]["fwd_bwd_peak"], m["iterations"][0]["step_peak"]) / GIB, 3)
    else:
        row["oom"] = "torch.OutOfMemoryError (CUDA out of memory)" + (" in iteration %d" % (r["iterations"] + 1))
    if r.get("tflops_median_steady") is not None:
        row["tflops_median_steady"] = r["tflops_median_steady"]
    return row

if __name__ == "__main__":
    rows = []
    for f in sys.argv[1:]:
        for r in json.load(open(f)):
            if r.get("kind") == "harness" or r["run"].get("kind") == "harness":
                continue
            rows.append(row_of(r))
    json.dump(rows, sys.stdout, indent=1)
