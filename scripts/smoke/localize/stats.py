"""Localization's statistics: best of repeats, noise, and what stands out from its peers.

Figures are speeds (higher is better); every figure handed in is finite and positive (the callers
drop what is not: runfolder.finite).
"""
from __future__ import annotations

import math
import statistics

# Relative distance below the peers' median that names a node, whatever the measured noise. On
# GPUs 5 %: Microsoft SuperBench flags nodes > 5 % below baseline, and Together's bad B200 nodes
# were 6-7 % below their peers. On CPU (functional mode) the processes of every "node" share a
# few cores with each other and the rest of the machine: only gross faults mean anything there.
FLOOR = {"full": 0.05, "functional": 0.6}
# All-reduce figures, between nodes and among one node's ranks: gloo over veth or loopback on two
# shared cores varies up to 4x between healthy pairs, and 2.8x between healthy nodes' intra-node
# figures, of one run (measured on the local cluster): functional mode names only a 10x gap.
NET_FLOOR = {"full": 0.05, "functional": 0.9}
# The probe's largest all-reduce on GPUs (probe.py's sizes end there), the size the presets'
# intra_node_busbw_gbs floors are figures for: the intra-node check runs at the probe's own largest
# size, at this one when the probe wrote nothing.
PROBE_LARGEST_GPU_BYTES = 4 * 2**30
K_NOISE = 3.0  # a figure must sit further than 3 repeat spreads (and 3 MADs of its peers) below the median: margin()
def best(values: list[float]) -> float:
    """A measurement's figure: the best of its repeats. Contention (another process, another job's
    start-up on a shared CPU) only ever slows a repeat down; a slow GPU, NIC or throttled CPU slows
    every repeat."""
    return max(values)


def robust_noise(repeats: list[list[float]]) -> float:
    """Relative noise of a best-of-repeats figure: how far the second-best repeat sits below the
    best, the median over items (0 when nothing was repeated)."""
    spreads = []
    for values in repeats:
        values = sorted((v for v in values if v > 0), reverse=True)
        if len(values) >= 2:
            spreads.append((values[0] - values[1]) / values[0])
    return statistics.median(spreads) if spreads else 0.0


def margin(noise: float) -> float:
    """The repeat-noise part of a threshold, as a fraction of the reference: K_NOISE repeat spreads
    compounded as ratios, 1 - (1 - noise)^K. For small noise the same as K x noise (0.15 % -> 0.45 %),
    but it never reaches the whole reference. K x noise did once a healthy group's best two repeats
    differed by a third (gloo pairs on two shared cores differ up to 25 %): no figure, however low,
    could stand out then, and a node behind a 20 Mbit/s NIC, 140x slower than its peers, went unnamed."""
    return 1 - (1 - min(max(noise, 0.0), 1.0)) ** K_NOISE


def spread(values: list[float], noise: float, floor: float) -> float:
    """The distance below a median that stands out, as a fraction of it: the floor, K repeat spreads
    (margin), or K MADs of the log figures, whichever is largest.

    The peers' spread is a MAD of log figures (speeds are compared as ratios): for a few percent the
    same as MAD / median, but it can never reach the median itself. A plain MAD could: three healthy
    CPU "nodes" at 0.025, 0.035 and 0.057 TFLOP/s gave 3 x 1.4826 x MAD = 0.045 > the median 0.035,
    and a node 7x slower than them went unnamed (fault matrix, 2026-12-03)."""
    logs = [math.log(max(v, 1e-12)) for v in values]
    log_med = statistics.median(logs)
    log_mad = 1.4826 * statistics.median(abs(v - log_med) for v in logs)
    return max(floor, margin(noise), 1 - math.exp(-K_NOISE * log_mad))


def threshold(values: list[float], noise: float, floor: float) -> tuple[float, float]:
    """(median, limit): a value lower than median - limit stands out from its peers."""
    med = statistics.median(values)
    return med, med * spread(values, noise, floor)


def low_outliers(figures: dict[str, float], noise: float, floor: float) -> dict[str, float]:
    """Nodes whose figure sits below their peers' median by more than the threshold -> that median.
    Each node against the others only (leave one out): with the node itself in the median and MAD,
    one very slow node among 4 inflated the MAD term past the median itself, and a node at 13 % of
    its peers' speed was named by nobody (local cluster, CPU-throttled node). Fewer than 3 figures
    cannot outvote one another: nothing is named then."""
    if len(figures) < 3:
        return {}
    named = {}
    for node, value in figures.items():
        med, limit = threshold([v for other, v in figures.items() if other != node], noise, floor)
        if med - value > limit:
            named[node] = med
    return named


# The MAD of the upper half of normally spread figures is 0.40 sigma (a half-normal's), not the
# 0.674 sigma of the whole: 1 / 0.3994 instead of 1.4826 turns it into the spread of all of them.
HALF_MAD_TO_SIGMA = 2.504


def reference(figures: list[float], noise: float, floor: float) -> tuple[float, float]:
    """(reference, limit) for group tests: the median of the upper half of the figures (their best
    when fewer than 3), so that up to half the groups can be slow without dragging the reference
    down. The limit's spread is the upper half's MAD scaled to the spread of all healthy groups
    (HALF_MAD_TO_SIGMA); scaled like a whole sample's MAD (1.4826, until 2026-12-03) it was 40 %
    too narrow, and healthy groups 3 % apart were named in up to 59 % of simulated runs."""
    upper = sorted(figures)[len(figures) // 2:]
    if len(upper) < 3:
        top = max(figures)
        return top, max(floor, margin(noise)) * top
    ref = statistics.median(upper)
    logs = [math.log(max(v, 1e-12)) for v in upper]
    log_med = statistics.median(logs)
    sigma = HALF_MAD_TO_SIGMA * statistics.median(abs(v - log_med) for v in logs)
    # second pass: the spread of every figure that the first estimate does not already call slow,
    # the lower healthy half included (twice the sample: half the error of the estimate)
    kept = [math.log(v) for v in figures if v > 0 and math.log(v) > math.log(ref) - K_NOISE * sigma]
    if len(kept) > len(upper):
        kept_med = statistics.median(kept)
        sigma = max(sigma, 1.4826 * statistics.median(abs(v - kept_med) for v in kept))
    return ref, ref * max(floor, margin(noise), 1 - math.exp(-K_NOISE * sigma))
