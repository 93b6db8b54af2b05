#!/bin/bash
# Parallel plan shared by the in-step scripts and mirrored by validator/planner.py (a test keeps
# them in agreement for N = 1..64). Sourced; reads:
#   PLAN_GPUS_PER_NODE PLAN_NODES PLAN_HEADS PLAN_QUERY_GROUPS PLAN_MICRO_BATCH PLAN_GRAD_ACCUM
#   PLAN_TENSOR (auto or a number) PLAN_PIPELINE
# and sets PLAN_TP PLAN_PP PLAN_DP PLAN_WORLD PLAN_GLOBAL_BATCH, or sets PLAN_ERROR (empty when valid).
# shellcheck disable=SC2034  # the PLAN_* results are read by the scripts that source this file

smoke_plan() {
    local gpus=$PLAN_GPUS_PER_NODE nodes=$PLAN_NODES heads=$PLAN_HEADS groups=$PLAN_QUERY_GROUPS
    PLAN_PP=${PLAN_PIPELINE:-1}
    PLAN_WORLD=$(( gpus * nodes ))
    PLAN_ERROR=
    if [[ ${PLAN_TENSOR:-auto} == auto ]]; then
        # Largest TP that stays inside one node (TP across the network is slow), divides the heads
        # and is a multiple or a divisor of the query groups.
        PLAN_TP=1
        local t
        for (( t = gpus; t >= 1; t-- )); do
            if (( heads % t == 0 && (groups % t == 0 || t % groups == 0) )); then
                PLAN_TP=$t
                break
            fi
        done
    else
        PLAN_TP=$PLAN_TENSOR
    fi
    if (( heads % PLAN_TP != 0 )); then
        PLAN_ERROR="tensor parallel $PLAN_TP does not divide $heads attention heads"
    elif (( groups % PLAN_TP != 0 && PLAN_TP % groups != 0 )); then
        PLAN_ERROR="tensor parallel $PLAN_TP is neither a multiple nor a divisor of $groups query groups"
    elif (( PLAN_TP > gpus )); then
        PLAN_ERROR="tensor parallel $PLAN_TP is larger than the $gpus GPUs of a node"
    elif (( PLAN_WORLD % (PLAN_TP * PLAN_PP) != 0 )); then
        PLAN_ERROR="world size $PLAN_WORLD is not divisible by TP x PP = $(( PLAN_TP * PLAN_PP ))"
    fi
    if [[ -n $PLAN_ERROR ]]; then
        return 0
    fi
    PLAN_DP=$(( PLAN_WORLD / (PLAN_TP * PLAN_PP) ))
    # The global batch grows with the data-parallel size, so every node count is valid.
    PLAN_GLOBAL_BATCH=$(( PLAN_MICRO_BATCH * PLAN_DP * PLAN_GRAD_ACCUM ))
    return 0
}
