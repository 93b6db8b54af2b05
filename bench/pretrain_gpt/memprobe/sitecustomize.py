"""memprobe: observe torch's allocator in a pretrain_gpt.py worker without changing Megatron.

Loaded through PYTHONPATH (sitecustomize) in every Python process; active only where MEMPROBE_OUT
is set and the process is a torchrun worker (LOCAL_RANK set) or MEMPROBE_ALWAYS=1.
- global optimizer-step hooks: per iteration, the forward+backward peak, allocated before the
  step (static + nothing else), the step's peak; peaks are reset only from iteration 3 on, so
  that Megatron's own memory report after iteration 1 still reads the whole first iteration;
- global module hooks, in one iteration (the 3rd) only: allocated after every module's forward
  of the first micro-batch (names from the top model), to attribute the saved activations.
Writes MEMPROBE_OUT/memprobe-rank<R>.json at exit.
"""
import os

if os.environ.get("MEMPROBE_OUT") and ("LOCAL_RANK" in os.environ or os.environ.get("MEMPROBE_ALWAYS") == "1"):
    import atexit
    import json
    import time

    import torch

    _S = {"iteration": 0, "iterations": [], "events": [], "names": {}, "max_alloc_before_resets": None,
          "first_forward_seen": False, "window_forwards": 0, "t0": time.time(), "static_at_start": []}
    _RESET = os.environ.get("MEMPROBE_RESET", "1") == "1"
    _WINDOW = int(os.environ.get("MEMPROBE_WINDOW", "3"))  # iteration number (1-based) whose modules are traced

    def _names(module):
        if not _S["names"]:
            for name, m in module.named_modules():
                _S["names"][id(m)] = name or type(module).__name__
        return _S["names"]

    def _pre_hook(module, args):
        if type(module).__name__ == "GPTModel":
            _names(module)
            if torch.is_grad_enabled() and torch._C._current_graph_task_id() == -1:
                _S["static_at_start"].append((_S["iteration"] + 1, torch.cuda.memory_allocated()))
                if _S["iteration"] + 1 == _WINDOW:
                    _S["window_forwards"] += 1
        return None

    def _post_hook(module, args, output):
        if _S["iteration"] + 1 != _WINDOW or _S["window_forwards"] != 1:
            return None
        name = _S["names"].get(id(module))
        if name is None:
            return None
        in_backward = torch._C._current_graph_task_id() != -1
        _S["events"].append((name, type(module).__name__, "backward" if in_backward else "forward",
                             torch.cuda.memory_allocated()))
        return None

    torch.nn.modules.module.register_module_forward_pre_hook(_pre_hook)
    torch.nn.modules.module.register_module_forward_hook(_post_hook)

    def _step_pre(optimizer, args, kwargs):
        it = _S["iteration"] + 1
        row = {"iteration": it, "fwd_bwd_peak": torch.cuda.max_memory_allocated(),
               "before_step": torch.cuda.memory_allocated(), "reserved_peak": torch.cuda.max_memory_reserved()}
        if it >= 3 and _RESET:
            if _S["max_alloc_before_resets"] is None:
                _S["max_alloc_before_resets"] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        _S["iterations"].append(row)

    def _step_post(optimizer, args, kwargs):
        row = _S["iterations"][-1]
        row["step_peak"] = torch.cuda.max_memory_allocated()
        row["after_step"] = torch.cuda.memory_allocated()
        row["reserved_peak"] = max(row["reserved_peak"], torch.cuda.max_memory_reserved())
        row["t"] = round(time.time() - _S["t0"], 3)
        if row["iteration"] >= 3 and _RESET:
            torch.cuda.reset_peak_memory_stats()
        _S["iteration"] += 1

    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    register_optimizer_step_pre_hook(_step_pre)
    register_optimizer_step_post_hook(_step_post)

    def _write():
        try:
            if not torch.cuda.is_initialized():
                return
            rows = _S["iterations"]
            overall = max([_S["max_alloc_before_resets"] or 0, torch.cuda.max_memory_allocated()]
                          + [r.get("fwd_bwd_peak", 0) for r in rows] + [r.get("step_peak", 0) for r in rows])
            reserved = max([torch.cuda.max_memory_reserved()] + [r.get("reserved_peak", 0) for r in rows])
            free, total = torch.cuda.mem_get_info()
            out = {"rank": int(os.environ.get("RANK", "0")), "max_allocated": overall, "max_reserved": reserved,
                   "outside_allocator": total - free - torch.cuda.memory_reserved(), "total": total,
                   "iterations": rows, "static_at_start": _S["static_at_start"], "events": _S["events"],
                   "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
            path = os.path.join(os.environ["MEMPROBE_OUT"], f"memprobe-rank{out['rank']}.json")
            with open(path, "w") as fh:
                json.dump(out, fh)
        except Exception as exc:  # never turn an observation into a failure
            print(f"memprobe: could not write: {exc!r}", flush=True)

    atexit.register(_write)
