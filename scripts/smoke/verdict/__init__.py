"""The verdict: the run folder judged PASS, WARN or FAIL, with what to do.

    rows      the typed row every section returns; the overall state; printable text
    logs      readers of what Megatron, torchrun, NCCL, pyxis and Slurm print (linear, bounded lines)
    sections  one judge per part of the run folder (stages, preflight, probe, training, container, ...)
    suspects  the one producer of suspects, exclude.txt and drain.sh (only nodes of the allocation)
    main      the flow: python -m smoke.verdict --run-dir DIR --preset DIR --mode MODE
"""
