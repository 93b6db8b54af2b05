"""Localization: which nodes of an allocation to exclude, and why.

    stats    best of repeats, noise, what stands out from its peers
    search   adaptive group testing (which nodes share an srun step, round by round)
    layers   the layers a suspect can be named in, as a table
    judge    the per-node checks' judgement; whether localization runs (SMOKE_LOCALIZE)
    driver   the srun steps from the batch shell (python -m smoke.localize.driver)
    worker   the torch program of those steps (python -m smoke.localize.worker)
    inprobe  the part inside the probe's own process group (the trigger)
Suspects reach exclude.txt and drain.sh through one producer: smoke.verdict.suspects.
"""
