#!/bin/bash
# Shared in-job logic for every preset, sourced by presets/*/train.sbatch in the batch shell.
# A preset sets only what is hand-tuned for its topology; everything here is the same everywhere.
# Functions are prefixed smoke_ and every variable they read is documented in README.md.

# Stop when not inside a Slurm job: these functions make no sense on a login node.
smoke_require_job() {
    if [[ -z ${SLURM_JOB_ID:-} ]]; then
        echo "smoke: not inside a Slurm job; submit with: sbatch --nodes N presets/<name>/train.sbatch" >&2
        exit 2
    fi
}

# Variable families that steer the job. The job takes them from the preset, from the --export
# list given to sbatch or from KEY=VALUE arguments, never from the user's login profile.
SMOKE_SETTING_NAMES='^(SMOKE|MEGATRON|NCCL|UCX|SHARP|TORCH|PET|PYXIS|WANDB)_[A-Z0-9_]*$'

# smoke_settings KEY=VALUE...: settings given as arguments after the script
# (sbatch --nodes 2 presets/NAME/train.sbatch MEGATRON_TRAIN_ITERS=50). Then, when Slurm rebuilt
# the login environment on the node (--export=NONE or a variable list imply --get-user-env on every
# release, sbatch.1; SLURM_GET_USER_ENV=1 says so), drop every setting the submitter did not name:
# a profile's NCCL_* must not steer the job. SMOKE_EXPORT holds sbatch's --export value.
smoke_settings() {
    local arg name named=,
    for arg in "$@"; do
        name=${arg%%=*}
        if [[ $arg != *=* || ! $name =~ $SMOKE_SETTING_NAMES ]]; then
            echo "smoke: argument '$arg' is not a KEY=VALUE setting (SMOKE_*, MEGATRON_*, NCCL_*, UCX_*, ...)" >&2
            exit 2
        fi
        export "${arg?}"
        named+=$name,
    done
    if [[ ${SLURM_GET_USER_ENV:-} != 1 ]]; then
        return 0
    fi
    local entry dropped=()
    for entry in ${SMOKE_EXPORT:+${SMOKE_EXPORT//,/ }}; do
        named+=${entry%%=*},
    done
    for name in $(compgen -e); do
        if [[ $name =~ $SMOKE_SETTING_NAMES && $named != *,$name,* && $name != SMOKE_EXPORT && $name != SMOKE_ROOT ]]; then
            dropped+=("$name")
            unset "$name"
        fi
    done
    if (( ${#dropped[@]} )); then
        echo "smoke: ignored from the login environment Slurm rebuilt on the node: ${dropped[*]} (pass settings as KEY=VALUE after the script)"
    fi
}

# smoke_init PRESET MIN_NODES MAX_NODES [KEY=VALUE...]
smoke_init() {
    smoke_require_job
    SMOKE_PRESET=$1
    local min_nodes=$2 max_nodes=$3
    shift 3
    smoke_settings "$@"
    # The job runs a spool copy of the script, so the repository is found from the submit folder.
    SMOKE_ROOT=${SMOKE_ROOT:-$SLURM_SUBMIT_DIR}
    if [[ ! -f $SMOKE_ROOT/scripts/job-lib.sh ]]; then
        echo "smoke: SMOKE_ROOT=$SMOKE_ROOT is not this repository; submit from its top folder or pass SMOKE_ROOT" >&2
        exit 2
    fi
    SMOKE_MODE=${SMOKE_MODE:-full}
    case $SMOKE_MODE in
        full|functional) ;;
        *) echo "smoke: SMOKE_MODE must be 'full' or 'functional', not '$SMOKE_MODE'" >&2; exit 2 ;;
    esac
    if (( SLURM_NNODES < min_nodes || SLURM_NNODES > max_nodes )); then
        echo "smoke: $SMOKE_PRESET supports $min_nodes to $max_nodes nodes; this job has $SLURM_NNODES" >&2
        exit 2
    fi
    # One folder per job: logs, TensorBoard, the verdict. The job id keeps concurrent runs apart.
    SMOKE_OUT=${SMOKE_OUTPUT_ROOT:-$SLURM_SUBMIT_DIR/smoke-runs}/$SLURM_JOB_ID
    # Job ids repeat (a requeued job, a controller whose state was reset, MaxJobId wrapping): an
    # earlier run's files must not be judged as this one's.
    local earlier contents=""
    if [[ -d $SMOKE_OUT ]]; then
        contents=$(ls -A "$SMOKE_OUT")
    fi
    if [[ -n $contents ]]; then
        earlier=$SMOKE_OUT.earlier-$(date -r "$SMOKE_OUT" +%Y%m%dT%H%M%S)
        mv "$SMOKE_OUT" "$earlier"
        echo "smoke: $SMOKE_OUT held an earlier run with this job id; moved to $earlier"
    fi
    mkdir -p "$SMOKE_OUT"
    chmod 0750 "$SMOKE_OUT"
    # Rendezvous on the first node of the allocation, resolved here (not inside a container
    # that may lack scontrol) and handed to every step.
    local hosts
    hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
    MASTER_ADDR=${hosts%%$'\n'*}
    # Derived from the job id so that jobs sharing a node do not collide; below 32768, where the
    # Linux ephemeral port range starts.
    MASTER_PORT=$(( 20000 + SLURM_JOB_ID % 12000 ))
    export SMOKE_PRESET SMOKE_ROOT SMOKE_MODE SMOKE_OUT MASTER_ADDR MASTER_PORT
    # Steps need a PATH even though --export=NONE gave the batch shell none to export.
    export PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}
    SMOKE_CONTAINER_ARGS=()
    declare -p SMOKE_SRUN_ARGS &>/dev/null || SMOKE_SRUN_ARGS=()
    # CPUs for each step's one task: what --exclusive gave on the smallest node of the job
    # (SLURM_JOB_CPUS_PER_NODE reads like "96(x2),64"), not a count hard-coded for one node type.
    local counts=${SLURM_JOB_CPUS_PER_NODE:-${SLURM_CPUS_ON_NODE:-1}} count
    SMOKE_CPUS_PER_NODE=
    for count in ${counts//,/ }; do
        count=${count%%(*}
        if [[ -z $SMOKE_CPUS_PER_NODE ]] || (( count < SMOKE_CPUS_PER_NODE )); then
            SMOKE_CPUS_PER_NODE=$count
        fi
    done
    export SMOKE_CPUS_PER_NODE
    # Slurm ends a job (time limit, scancel, a failed node) with SIGTERM and SIGKILL KillWait seconds
    # later: the batch shell outlives the SIGTERM so that the verdict is still written.
    trap 'SMOKE_SIGNALLED=SIGTERM' TERM
    echo "smoke: preset=$SMOKE_PRESET mode=$SMOKE_MODE nodes=$SLURM_NNODES rendezvous=$MASTER_ADDR:$MASTER_PORT out=$SMOKE_OUT"
}

# smoke_srun_args ARG...: extra srun arguments a topology needs for every step (CPU binding).
smoke_srun_args() {
    SMOKE_SRUN_ARGS=("$@")
}

# smoke_container IMAGE ARCH: import the image once per job into an arch-named squashfs on shared
# storage, then let every step start from that file.
smoke_container() {
    local image=${SMOKE_IMAGE:-$1} arch=$2  # SMOKE_IMAGE: a site's own build of the same Megatron release
    if [[ $SMOKE_MODE == functional ]]; then
        echo "smoke: functional mode: no container, host Python ${SMOKE_PYTHON:-python3}"
        export SMOKE_PYTHON=${SMOKE_PYTHON:-python3}
        return 0
    fi
    local cache_dir=${SMOKE_IMAGE_CACHE:-$SMOKE_ROOT/.image-cache}
    local tag=${image##*[:@]}
    local sqsh=$cache_dir/megatron-$arch-${tag//[^A-Za-z0-9._-]/_}.sqsh
    mkdir -p "$cache_dir"
    if [[ ! -s $sqsh ]]; then
        echo "smoke: importing $image for $arch into $sqsh (one task)"
        # One task writes the file; every task of a multi-task import would write it at once.
        srun --kill-on-bad-exit=1 --nodes=1 --ntasks=1 --container-image="$image" \
            --container-save="$sqsh.partial.sqsh" true
        mv -f "$sqsh.partial.sqsh" "$sqsh"
    fi
    SMOKE_CONTAINER_ARGS=(--container-image="$sqsh"
        --container-mounts="$SMOKE_ROOT:$SMOKE_ROOT:ro,$SMOKE_OUT:$SMOKE_OUT"
        --no-container-mount-home)
    export SMOKE_PYTHON=python
}

# smoke_wandb: wandb only when a key is available on the compute node; the key is never printed.
# The key file must be the user's own regular file (not a link: it could lead anywhere), readable
# by nobody else (0600 or 0400; any group or other bit refuses it).
smoke_wandb() {
    local key_file=${SMOKE_WANDB_KEY_FILE:-$HOME/.config/smoke/wandb_api_key}
    if [[ -z ${WANDB_API_KEY:-} && ( -e $key_file || -L $key_file ) ]]; then
        local why="" owner mode
        if [[ -L $key_file ]]; then
            why="is a symbolic link"
        elif [[ ! -f $key_file ]]; then
            why="is not a regular file"
        else
            local me
            owner=$(stat -c %u -- "$key_file")
            mode=$(stat -c %a -- "$key_file")
            me=$(id -u)
            if [[ $owner != "$me" ]]; then
                why="belongs to uid $owner, not to you"
            elif (( 8#$mode & 8#077 )); then
                why="is readable or writable by others (mode $mode; chmod 600)"
            elif [[ ! -r $key_file ]]; then
                why="is not readable (mode $mode)"
            fi
        fi
        if [[ -n $why ]]; then
            echo "smoke: $key_file $why; wandb stays off" >&2
            export SMOKE_WANDB=0
            return 0
        fi
        WANDB_API_KEY=$(<"$key_file")
        export WANDB_API_KEY
    fi
    if [[ -n ${WANDB_API_KEY:-} ]]; then
        export SMOKE_WANDB=1
        echo "smoke: wandb on (project ${WANDB_PROJECT:=slurm-smoke})"
        export WANDB_PROJECT
    else
        export SMOKE_WANDB=0
        echo "smoke: wandb off (no key file at $key_file)"
    fi
}

# smoke_stage NAME COMMAND...: one srun step, one task per node, its own log. The first failing
# stage stops the job; --kill-on-bad-exit ends every task when one fails instead of letting the
# others wait until the time limit.
smoke_stage() {
    local name=$1
    shift
    local status
    smoke_stop_if_signalled "$name"
    echo "smoke: stage $name"
    set +e  # a failed stage must reach the verdict below, not end the script here
    # shellcheck disable=SC2312  # srun's status is read from PIPESTATUS right after
    srun --kill-on-bad-exit=1 --wait="${SMOKE_STEP_GRACE:-30}" --ntasks-per-node=1 \
        --cpus-per-task="${SLURM_CPUS_PER_TASK:-$SMOKE_CPUS_PER_NODE}" --label \
        "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}" "$@" 2>&1 \
        | tee -a "$SMOKE_OUT/$name.log"
    status=${PIPESTATUS[0]}
    set -e
    echo "$name $status" >> "$SMOKE_OUT/stages.txt"
    smoke_stop_if_signalled "$name"
    if [[ $name == probe ]]; then
        smoke_localize "$status"  # failed or uneven: which node (SMOKE_LOCALIZE)
    fi
    if (( status != 0 )); then
        echo "smoke: stage $name failed with exit code $status" >&2
        smoke_verdict
        exit 1
    fi
    if [[ $name == "${SMOKE_STOP_AFTER:-}" ]]; then
        echo "$name" > "$SMOKE_OUT/stopped-after"
        echo "smoke: SMOKE_STOP_AFTER=$name: no further stage"
        smoke_verdict
        exit 0
    fi
}

# smoke_localize PROBE_STATUS: narrow a failed or uneven probe down to the nodes to exclude, with
# srun steps on subsets of the allocation (scripts/localize.py). SMOKE_LOCALIZE=auto (default)
# runs it only when the probe failed or its per-node figures disagree; always; never. It writes
# localize.json and never fails the job itself: the verdict judges.
smoke_localize() {
    local python=python3
    if [[ $SMOKE_MODE == functional ]]; then
        python=$SMOKE_PYTHON
    fi
    SMOKE_STEP_ARGS=$(printf '%s\n' "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}")
    export SMOKE_STEP_ARGS
    "$python" "$SMOKE_ROOT/scripts/localize.py" drive --out "$SMOKE_OUT" --mode "$SMOKE_MODE" \
        --preset "$SMOKE_ROOT/presets/$SMOKE_PRESET" --probe-status "$1" \
        || echo "smoke: localization ended with exit code $?; the verdict says what it has" >&2
}

# smoke_stop_if_signalled STAGE: after Slurm's SIGTERM, write the verdict (which says so) and stop.
smoke_stop_if_signalled() {
    if [[ -n ${SMOKE_SIGNALLED:-} ]]; then
        echo "$SMOKE_SIGNALLED $1" > "$SMOKE_OUT/signalled"
        echo "smoke: Slurm is ending this job ($SMOKE_SIGNALLED during stage $1): time limit, scancel or a failed node" >&2
        smoke_verdict
        exit 1
    fi
}

# smoke_verdict: combine every stage's result into verdict.json and print the table.
smoke_verdict() {
    local python=python3
    if [[ $SMOKE_MODE == functional ]]; then
        python=$SMOKE_PYTHON
    fi
    "$python" "$SMOKE_ROOT/scripts/verdict.py" --run-dir "$SMOKE_OUT" \
        --preset "$SMOKE_ROOT/presets/$SMOKE_PRESET" --mode "$SMOKE_MODE"
}
