"""Stand-in for torchrun (named as such): reads pretrain_gpt.py's argument list as megatron-node
passes it and runs Megatron-LM's own parser and validate_args on it (CPU, no training).
Prints one JSON line: accepted or the parser's message. Needs torch, numpy, six, regex and
MEGATRON_DIR's tree importable (on PYTHONPATH, as bench/pretrain_gpt/record_parser.py puts it); tests/fixtures/megatron-parser/ holds what it said for core_v0.13.0:

    printf '#!/bin/bash\nexec python3 %s/bench/pretrain_gpt/parse_check.py "$@"\n' "$PWD" > /tmp/bin/torchrun
    PATH=/tmp/bin:$PATH MEGATRON_DIR=... scripts/megatron-node     # with the per-task Slurm variables
"""
import contextlib
import io
import json
import os
import sys

argv = sys.argv[1:]
at = next(i for i, a in enumerate(argv) if a.endswith("pretrain_gpt.py"))
program, args = argv[at], argv[at + 1:]
os.environ.update(RANK="0", WORLD_SIZE=os.environ.get("CHECK_WORLD_SIZE", "1"), LOCAL_RANK="0")
import warnings
warnings.filterwarnings("ignore")
from megatron.training.arguments import parse_args, validate_args  # noqa: E402

sys.argv = [program] + args
err = io.StringIO()
result = {"args": args}
try:
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        parsed = parse_args(ignore_unknown_args=False)
        validate_args(parsed, {"tokenizer_type": "GPT2BPETokenizer"})
    result.update(accepted=True, transformer_impl=parsed.transformer_impl,
                  attention_backend=str(parsed.attention_backend), world=parsed.world_size,
                  tp=parsed.tensor_model_parallel_size, global_batch=parsed.global_batch_size,
                  sequence_parallel=parsed.sequence_parallel, recompute=parsed.recompute_granularity,
                  softmax_fp32=parsed.attention_softmax_in_fp32, grads_fp32=parsed.accumulate_allreduce_grads_in_fp32,
                  padded_vocab=None)
except SystemExit as exc:
    result.update(accepted=False, code=exc.code, message=err.getvalue().strip().splitlines()[-1:] )
except AssertionError as exc:
    result.update(accepted=False, assertion=str(exc))
print(json.dumps(result))
