#!/bin/bash
# Parallel plan shared by the in-step scripts and mirrored by validator/planner.py (a test keeps
# them in agreement for N = 1..64). Sourced; call
#   smoke_plan GPUS_PER_NODE NODES HEADS QUERY_GROUPS MICRO_BATCH GRAD_ACCUM TENSOR(auto|n) PIPELINE \
#              SEQ_LENGTH NUM_LAYERS
# It sets PLAN_TP PLAN_PP PLAN_DP PLAN_WORLD PLAN_GLOBAL_BATCH, or sets PLAN_ERROR (empty when valid).
# shellcheck disable=SC2034  # the PLAN_* results are read by the scripts that source this file

smoke_plan() {
    local gpus=$1 nodes=$2 heads=$3 groups=$4 micro_batch=$5 grad_accum=$6 tensor=$7
    PLAN_PP=$8
    local seq_length=$9 num_layers=${10}
    PLAN_WORLD=$(( gpus * nodes ))
    PLAN_ERROR=
    if [[ $tensor == auto ]]; then
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
        PLAN_TP=$tensor
    fi
    if (( heads % PLAN_TP != 0 )); then
        PLAN_ERROR="tensor parallel $PLAN_TP does not divide $heads attention heads"
    elif (( groups % PLAN_TP != 0 && PLAN_TP % groups != 0 )); then
        PLAN_ERROR="tensor parallel $PLAN_TP is neither a multiple nor a divisor of $groups query groups"
    elif (( PLAN_TP > gpus )); then
        PLAN_ERROR="tensor parallel $PLAN_TP is larger than the $gpus GPUs of a node"
    elif (( PLAN_WORLD % (PLAN_TP * PLAN_PP) != 0 )); then
        PLAN_ERROR="world size $PLAN_WORLD is not divisible by TP x PP = $(( PLAN_TP * PLAN_PP ))"
    elif (( PLAN_TP > 1 && seq_length % PLAN_TP != 0 )); then
        # megatron-node turns on sequence parallelism with TP > 1, which splits the sequence over TP.
        PLAN_ERROR="sequence length $seq_length is not divisible by tensor parallel $PLAN_TP (sequence parallelism)"
    elif (( num_layers % PLAN_PP != 0 )); then
        PLAN_ERROR="$num_layers layers do not split evenly into $PLAN_PP pipeline stages"
    fi
    if [[ -n $PLAN_ERROR ]]; then
        return 0
    fi
    PLAN_DP=$(( PLAN_WORLD / (PLAN_TP * PLAN_PP) ))
    # The global batch grows with the data-parallel size, so every node count is valid.
    PLAN_GLOBAL_BATCH=$(( micro_batch * PLAN_DP * grad_accum ))
    return 0
}
