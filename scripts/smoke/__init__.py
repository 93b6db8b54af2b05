"""What runs inside a smoke-test job: the stages' programs and the batch host's judges.

Run as modules, `python -m smoke.<module>`, with scripts/ on PYTHONPATH (job-lib.sh sets it once;
nothing is installed in the image). Standard library only, except the programs torchrun starts
(probe, tiny_train, localize.worker), which need torch. Nothing here imports the validator; the
validator imports the vocabulary from here.

    vocab        modes, fabrics, link layers, localization layers, PASS/WARN/FAIL, ports, probe sizes
    runfolder    every file of the run folder, one reader and one writer (docs/run-folder.md)
    manifest     the preset's manifest as the job reads it
    slurm        node names, hostlists, the job's allocation
    preflight    stage: per-node checks before anything starts
    probe        stage: all-reduce sweep, GEMM, the per-node part of localization
    tiny_train   stage: the functional modes' stand-in for Megatron
    rank_bind    each rank on its GPU's NUMA node (torchrun-node runs every rank through it)
    localize     which nodes to exclude: statistics, search, layers, judging, driver, worker
    verdict      PASS, WARN or FAIL from the run folder: log readers, sections, suspects, main
"""
