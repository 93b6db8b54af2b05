#!/bin/bash
# Parallel plan shared by the in-step scripts and mirrored by validator/planner.py (a test keeps
# them in agreement for N = 1..64). Sourced; call
#   smoke_plan GPUS_PER_NODE NODES HEADS QUERY_GROUPS MICRO_BATCH GRAD_ACCUM TENSOR(auto|n) PIPELINE \
#              SEQ_LENGTH NUM_LAYERS MEGATRON_RELEASE
# It sets PLAN_TP PLAN_PP PLAN_DP PLAN_WORLD PLAN_GLOBAL_BATCH, or sets PLAN_ERROR (empty when valid).
# The rules are those of the Megatron release (core_v0.13.0, 0.16, ...), as the flag lists are.
# shellcheck disable=SC2034  # the PLAN_* results are read by the scripts that source this file

# smoke_plan_groups_ok RELEASE_MINOR TP GROUPS: the GQA check of Megatron's TransformerConfig
# (megatron/core/transformer/transformer_config.py): up to core_v0.15 the query groups must be a
# multiple of TP; from core_v0.16.0 TP may also be a multiple of the groups.
smoke_plan_groups_ok() {
    (( $3 % $2 == 0 || ($1 >= 16 && $2 % $3 == 0) ))
}

smoke_plan() {
    local gpus=$1 nodes=$2 heads=$3 groups=$4 micro_batch=$5 grad_accum=$6 tensor=$7
    PLAN_PP=$8
    local seq_length=$9 num_layers=${10} release=${11:-} minor
    PLAN_WORLD=$(( gpus * nodes ))
    PLAN_ERROR=
    if [[ $release =~ ^(core_[rv])?0\.([0-9]+)(\.|rc|$) ]]; then
        minor=$(( 10#${BASH_REMATCH[2]} ))
    else
        PLAN_TP=0
        PLAN_ERROR="no plan rules for Megatron release '$release' (expected core_v0.N.M)"
        return 0
    fi
    if [[ $tensor == auto ]]; then
        # Smallest valid TP: data parallel first (NVIDIA's sizing guidance), TP only where the
        # model needs it; a preset that needs TP for memory names it (python -m validator plan).
        PLAN_TP=1
        local t
        for (( t = 1; t <= gpus; t++ )); do
            if (( heads % t == 0 )) && smoke_plan_groups_ok "$minor" "$t" "$groups"; then
                PLAN_TP=$t
                break
            fi
        done
    else
        PLAN_TP=$tensor
    fi
    if (( heads % PLAN_TP != 0 )); then
        PLAN_ERROR="tensor parallel $PLAN_TP does not divide $heads attention heads"
    elif ! smoke_plan_groups_ok "$minor" "$PLAN_TP" "$groups"; then
        if (( minor >= 16 )); then
            PLAN_ERROR="tensor parallel $PLAN_TP is neither a multiple nor a divisor of $groups query groups"
        else
            PLAN_ERROR="$groups query groups are not a multiple of tensor parallel $PLAN_TP (Megatron $release; TP as a multiple of the groups needs core_v0.16.0)"
        fi
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
