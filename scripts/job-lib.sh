#!/bin/bash
# The job skeleton every preset sources in its batch shell (presets/*/train.sbatch): settings,
# the run folder, the container, stages as srun steps, localization, the verdict. A preset sets
# only what is hand-tuned for its topology; everything here is the same everywhere. Functions are
# prefixed smoke_; every variable they read is documented in README.md; the run folder's files in
# docs/run-folder.md. The library never changes its caller's shell options: statuses are taken
# with `|| status=$?`, not by switching set -e off.

# Variable families that steer the job. The job takes them from the preset, from the --export
# list given to sbatch or from KEY=VALUE arguments, never from the user's login profile.
SMOKE_SETTING_NAMES='^(SMOKE|MEGATRON|NCCL|UCX|SHARP|TORCH|PET|PYXIS|WANDB)_[A-Z0-9_]*$'
# Settings that are whole numbers (seconds, counts): checked once, digits only, never evaluated.
SMOKE_COUNT_SETTINGS=(SMOKE_STEP_GRACE SMOKE_RDZV_TIMEOUT SMOKE_COLLECTIVE_TIMEOUT SMOKE_FUNCTIONAL_STEPS
    SMOKE_PARTIAL_STALE_MIN SMOKE_IMAGE_CACHE_MIN_GIB SMOKE_IB_PORTS SMOKE_NIC_GBPS SMOKE_HANG_AFTER
    SMOKE_HANG_FIRST SMOKE_HANG_EVIDENCE SMOKE_FUNCTIONAL_STEP_MS)

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
    if [[ ${SLURM_GET_USER_ENV:-} == 1 ]]; then
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
    fi
    for name in "${SMOKE_COUNT_SETTINGS[@]}"; do
        if [[ -n ${!name:-} && ! ${!name} =~ ^[0-9]{1,6}$ ]]; then
            echo "smoke: $name must be a whole number (digits only, at most 6), not '${!name:0:40}'" >&2
            exit 2
        fi
    done
}

# smoke_init PRESET MIN_NODES MAX_NODES [KEY=VALUE...]
smoke_init() {
    if [[ -z ${SLURM_JOB_ID:-} ]]; then  # these functions make no sense on a login node
        echo "smoke: not inside a Slurm job; submit with: sbatch --nodes N presets/<name>/train.sbatch" >&2
        exit 2
    fi
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
        full|functional|container-functional) ;;
        *) echo "smoke: SMOKE_MODE must be 'full', 'functional' or 'container-functional', not '$SMOKE_MODE'" >&2; exit 2 ;;
    esac
    if (( SLURM_NNODES < min_nodes || SLURM_NNODES > max_nodes )); then
        echo "smoke: $SMOKE_PRESET supports $min_nodes to $max_nodes nodes; this job has $SLURM_NNODES" >&2
        exit 2
    fi
    # The in-job Python package (scripts/smoke), run as `python -m smoke.<module>`: its path is set
    # here once, for the batch host and for every step (scripts/container-step inside a container).
    export PYTHONPATH=$SMOKE_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}
    # The judges (verdict, localization) run on the batch host: the submitted Python or python3.
    SMOKE_HOST_PYTHON=${SMOKE_VERDICT_PYTHON:-${SMOKE_PYTHON:-python3}}
    # What the in-container checks compare the image with (nccl_min, the stack's Megatron), from the
    # manifest, unless given as settings. This is also where a host Python without PyYAML stops the
    # job, before any stage: the judges need the preset's floors.
    local line facts
    facts=$("$SMOKE_HOST_PYTHON" -m smoke.manifest env "$SMOKE_ROOT/presets/$SMOKE_PRESET") || exit 2
    while IFS= read -r line; do
        if [[ $line =~ ^(SMOKE_[A-Z_]+)= && -z ${!BASH_REMATCH[1]:-} ]]; then
            export "${line?}"
        fi
    done <<< "$facts"
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
    # that may lack scontrol) and handed to every step; the port from the job id (smoke.vocab).
    local hosts
    hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
    MASTER_ADDR=${hosts%%$'\n'*}
    MASTER_PORT=$("$SMOKE_HOST_PYTHON" -m smoke.slurm port "$SLURM_JOB_ID")
    export SMOKE_PRESET SMOKE_ROOT SMOKE_MODE SMOKE_OUT MASTER_ADDR MASTER_PORT
    # Steps need a PATH even though --export=NONE gave the batch shell none to export.
    export PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}
    SMOKE_CONTAINER_ARGS=() SMOKE_STEP_PREFIX=() SMOKE_FAILED="" SMOKE_STOPPED=""
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

# smoke_container IMAGE ARCH: check the host, get the image's squashfs from the image cache
# (scripts/image-cache: imported once per job when missing), then let every step start from it
# under pyxis. SMOKE_IMAGE replaces IMAGE for a run (a site's own image, the local cluster's
# stand-in); SMOKE_ARCH_OVERRIDE replaces ARCH (tests only: the verdict says so and cannot PASS).
smoke_container() {
    local image=${SMOKE_IMAGE:-$1} arch=$2 want=${SMOKE_ARCH_OVERRIDE:-$2} sqsh
    if [[ $SMOKE_MODE == functional ]]; then
        echo "smoke: functional mode: no container, host Python ${SMOKE_PYTHON:-python3}"
        export SMOKE_PYTHON=${SMOKE_PYTHON:-python3}
        return 0
    fi
    local record=$SMOKE_OUT/container.tsv
    printf 'info\truntime\tpyxis\ninfo\timage\t%s\ninfo\tpreset_arch\t%s\ninfo\tarch\t%s\n' \
        "$image" "$arch" "$want" > "$record"
    # pyxis, enroot and the node's architecture, then the image from the cache: each writes its rows
    # for the verdict and says why on stderr when it fails.
    if ! SMOKE_RECORD=$record "$SMOKE_ROOT/scripts/container-host" check "$want" "$arch"; then
        SMOKE_FAILED=container
        return 0
    fi
    if ! sqsh=$(SMOKE_RECORD=$record SMOKE_IMPORT_LOG=$SMOKE_OUT/import.log "$SMOKE_ROOT/scripts/image-cache" get "$image" "$want"); then
        SMOKE_FAILED=container  # image-cache wrote its FAIL row and said why
        return 0
    fi
    printf 'info\tsqsh\t%s\n' "$sqsh" >> "$record"
    # One root filesystem per node for the whole job: the first step unpacks the image, later steps
    # (and localization's) reuse it; an unnamed container is unpacked again for every step, minutes
    # for the Megatron image. The job id keeps another job's container (global scope) from being reused.
    SMOKE_CONTAINER_NAME=smoke-$SLURM_JOB_ID
    SMOKE_CONTAINER_ARGS=(--container-image="$sqsh" --container-name="$SMOKE_CONTAINER_NAME"
        --container-mounts="$SMOKE_ROOT:$SMOKE_ROOT:ro,$SMOKE_OUT:$SMOKE_OUT"
        --no-container-mount-home
        # enroot's root filesystem is read-only by default; Megatron (core_v0.13.0) compiles its
        # dataset helpers into the image's source tree at start and exits when it cannot.
        --container-writable)
    # pyxis lets a variable the image's ENV sets win over the exported one unless --container-env
    # names it (pyxis args.c): the topology's NCCL/UCX/SHARP settings must win over a site image's.
    local name names=""
    for name in $(compgen -e); do
        if [[ $name =~ ^(NCCL|UCX|SHARP)_ ]]; then
            names+=${names:+,}$name
        fi
    done
    if [[ -n $names ]]; then
        SMOKE_CONTAINER_ARGS+=(--container-env="$names")
    fi
    # Inside the container first: the package path ahead of the image's own PYTHONPATH, HOME and
    # the compilers' caches in the run folder (home is not mounted).
    SMOKE_STEP_PREFIX=("$SMOKE_ROOT/scripts/container-step" "$SMOKE_OUT/home")
    mkdir -p "$SMOKE_OUT/home"
    # The image's Python: python3 in container-functional mode, the real image's python otherwise.
    if [[ $SMOKE_MODE == container-functional ]]; then
        export SMOKE_PYTHON=python3
    else
        export SMOKE_PYTHON=python
    fi
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

# smoke_stage NAME COMMAND...: one srun step, one task per node, its own log. After a failed stage,
# a SIGTERM or SMOKE_STOP_AFTER the later stages are skipped (and say so); smoke_verdict, the
# preset's last line, judges. --kill-on-bad-exit ends every task when one fails instead of letting
# the others wait until the time limit.
smoke_stage() {
    local name=$1 status=0
    shift
    if smoke_skip "$name"; then
        return 0
    fi
    echo "smoke: stage $name"
    # The hang watchdog (smoke.watchdog) for stages that run ranks: a monitor here, an agent per node
    # and the rank side, all told where by SMOKE_WATCH_DIR. It ends the stage when progress stops for
    # SMOKE_HANG_AFTER seconds and writes hang.json; SMOKE_WATCHDOG=0 turns it off.
    local watch_dir="" monitor=""
    if [[ ${SMOKE_WATCHDOG:-1} != 0 && " ${SMOKE_WATCH_STAGES:-probe megatron localize} " == *" $name "* ]]; then
        watch_dir=$SMOKE_OUT/watch/$name
        mkdir -p "$watch_dir"
        # its decision line goes to the job log (stdout), its diagnostics to the stage log
        "$SMOKE_HOST_PYTHON" -m smoke.watchdog.monitor --run-dir "$SMOKE_OUT" --stage "$name" \
            --mode "$SMOKE_MODE" --shell-pid $$ 2>> "$SMOKE_OUT/$name.log" &
        monitor=$!
    fi
    # shellcheck disable=SC2312  # pipefail: the pipeline's status is srun's (tee's only when tee fails)
    SMOKE_STAGE=$name SMOKE_WATCH_DIR=$watch_dir \
    srun --kill-on-bad-exit=1 --wait="${SMOKE_STEP_GRACE:-30}" --ntasks-per-node=1 \
        --cpus-per-task="${SLURM_CPUS_PER_TASK:-$SMOKE_CPUS_PER_NODE}" --label \
        "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}" "${SMOKE_STEP_PREFIX[@]}" "$@" 2>&1 \
        | tee -a "$SMOKE_OUT/$name.log" || status=$?
    if [[ -n $monitor ]]; then
        kill -TERM "$monitor" 2>/dev/null || true
        wait "$monitor" 2>/dev/null || true
    fi
    echo "$name $status" >> "$SMOKE_OUT/stages.txt"
    printf -v "SMOKE_STATUS_${name//[^A-Za-z0-9_]/_}" '%s' "$status"
    if [[ -n ${SMOKE_SIGNALLED:-} ]]; then
        smoke_skip "$name"  # records the signal against this stage
    elif (( status != 0 )); then
        echo "smoke: stage $name failed with exit code $status" >&2
        SMOKE_FAILED=$name
    elif [[ $name == "${SMOKE_STOP_AFTER:-}" ]]; then
        echo "$name" > "$SMOKE_OUT/stopped-after"
        echo "smoke: SMOKE_STOP_AFTER=$name: no further stage"
        SMOKE_STOPPED=$name
    fi
}

# smoke_skip STAGE: true (and says why) when STAGE must not run: Slurm's SIGTERM arrived (recorded
# in the run folder once), a stage failed, or SMOKE_STOP_AFTER stopped the job.
smoke_skip() {
    if [[ -n ${SMOKE_SIGNALLED:-} ]]; then
        if [[ ! -e $SMOKE_OUT/signalled ]]; then
            echo "$SMOKE_SIGNALLED $1" > "$SMOKE_OUT/signalled"
            echo "smoke: Slurm is ending this job ($SMOKE_SIGNALLED during stage $1): time limit, scancel or a failed node" >&2
        fi
        return 0
    fi
    if [[ -n $SMOKE_FAILED || -n $SMOKE_STOPPED ]]; then
        echo "smoke: $1 skipped (${SMOKE_FAILED:+$SMOKE_FAILED failed}${SMOKE_STOPPED:+stopped after $SMOKE_STOPPED})"
        return 0
    fi
    return 1
}

# smoke_localize: after the probe stage, narrow a failed or uneven probe down to the nodes to
# exclude, with srun steps on subsets of the allocation (python -m smoke.localize.driver).
# SMOKE_LOCALIZE=auto (default) runs it only when the probe failed, wrote nothing, its per-node
# figures disagree or (full mode) the job is below the preset; always; never. It writes
# localize.json and never fails the job itself: the verdict judges.
smoke_localize() {
    local probe_status=${SMOKE_STATUS_probe:-}
    if [[ -z $probe_status || -n ${SMOKE_SIGNALLED:-} ]]; then
        return 0  # no probe ran (an earlier stage failed), or Slurm is ending the job
    fi
    "$SMOKE_HOST_PYTHON" -m smoke.localize.driver --out "$SMOKE_OUT" --mode "$SMOKE_MODE" \
        --preset "$SMOKE_ROOT/presets/$SMOKE_PRESET" --probe-status "$probe_status" \
        -- "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}" -- "${SMOKE_STEP_PREFIX[@]}" \
        || echo "smoke: localization ended with exit code $?; the verdict says what it has" >&2
}

# smoke_verdict: the preset's last line: every stage's result into verdict.json and the table; the
# job's exit status is the verdict's (0 PASS or WARN, 1 FAIL).
smoke_verdict() {
    if [[ -n ${SMOKE_CONTAINER_NAME:-} ]]; then  # its unpacked image off every node (scripts/container-host)
        "$SMOKE_ROOT/scripts/container-host" remove "$SLURM_JOB_ID" "${SMOKE_SRUN_ARGS[@]}" \
            > "$SMOKE_OUT/container-remove.log" 2>&1 \
            || echo "smoke: could not remove container $SMOKE_CONTAINER_NAME from every node (container-remove.log)" >&2
    fi
    "$SMOKE_HOST_PYTHON" -m smoke.verdict --run-dir "$SMOKE_OUT" \
        --preset "$SMOKE_ROOT/presets/$SMOKE_PRESET" --mode "$SMOKE_MODE"
}
