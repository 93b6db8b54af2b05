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
        full|functional|container-functional) ;;
        *) echo "smoke: SMOKE_MODE must be 'full', 'functional' or 'container-functional', not '$SMOKE_MODE'" >&2; exit 2 ;;
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
    SMOKE_CONTAINER_ARGS=() SMOKE_STEP_ENV=()
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

# smoke_container IMAGE ARCH: check the host, import the image once per job into a squashfs in
# the image cache (shared storage), then let every step start from that file under pyxis.
# SMOKE_IMAGE replaces IMAGE for a run (a site's own image, the local cluster's stand-in);
# SMOKE_ARCH_OVERRIDE replaces ARCH (tests only: the verdict says so and cannot PASS on it).
smoke_container() {
    local image=${SMOKE_IMAGE:-$1} arch=$2  # SMOKE_IMAGE: a site's own build of the same Megatron release
    if [[ $SMOKE_MODE == functional ]]; then
        echo "smoke: functional mode: no container, host Python ${SMOKE_PYTHON:-python3}"
        export SMOKE_PYTHON=${SMOKE_PYTHON:-python3}
        return 0
    fi
    # The verdict runs on the host, not in the image: the submitted Python (or python3) runs it.
    SMOKE_VERDICT_PYTHON=${SMOKE_PYTHON:-python3}
    local cache_dir=${SMOKE_IMAGE_CACHE:-$SMOKE_ROOT/.image-cache}
    local record=$SMOKE_OUT/container.tsv host
    host=$(hostname)
    local want=${SMOKE_ARCH_OVERRIDE:-$arch}
    printf 'info\truntime\tpyxis\ninfo\timage\t%s\ninfo\tpreset_arch\t%s\ninfo\tarch\t%s\n' \
        "$image" "$arch" "$want" > "$record"
    smoke_sweep_partials "$cache_dir"
    smoke_container_preflight "$image" "$arch" "$want" "$cache_dir" "$host"
    smoke_image_cache_name "$image" "$want"
    local sqsh=$cache_dir/$SMOKE_IMAGE_NAME
    printf 'info\tsqsh\t%s\n' "$sqsh" >> "$record"
    if [[ -s $sqsh ]]; then
        echo "smoke: image cached: $sqsh"
    else
        smoke_container_import "$image" "$sqsh"
    fi
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
    # Home is not mounted: HOME and the compilers' caches (Triton, TorchInductor, torch
    # extensions) go to the run folder, set inside the container over whatever the image sets.
    SMOKE_STEP_ENV=(env "HOME=$SMOKE_OUT/home" "XDG_CACHE_HOME=$SMOKE_OUT/home/.cache"
        "TRITON_CACHE_DIR=$SMOKE_OUT/home/.triton" "TORCHINDUCTOR_CACHE_DIR=$SMOKE_OUT/home/.inductor"
        "TORCH_EXTENSIONS_DIR=$SMOKE_OUT/home/.torch_extensions")
    mkdir -p "$SMOKE_OUT/home"
    # The image's Python: python3 in container-functional mode, the real image's python otherwise.
    if [[ $SMOKE_MODE == container-functional ]]; then
        export SMOKE_PYTHON=python3
    else
        export SMOKE_PYTHON=python
    fi
}

# smoke_container_fail CHECK DETAIL: a container check failed before any stage: FAIL verdict, stop.
smoke_container_fail() {
    printf 'check\t%s\tFAIL\t%s\n' "$1" "${2//$'\n'/ }" >> "$SMOKE_OUT/container.tsv"
    echo "smoke: container $1: $2" >&2
    smoke_verdict  # FAIL: with set -e its exit code ends the job here
    exit 1
}

smoke_container_pass() {
    printf 'check\t%s\t%s\t%s\n' "$1" "${3:-PASS}" "${2//$'\n'/ }" >> "$SMOKE_OUT/container.tsv"
    echo "smoke: container $1: ${3:-PASS} $2"
}

# smoke_container_preflight IMAGE PRESET_ARCH ARCH CACHE: on the batch host, before any import.
smoke_container_preflight() {
    local image=$1 preset_arch=$2 arch=$3 cache_dir=$4 host=$5 machine version options
    # validator: disable=launch-kill-on-bad-exit -- srun --help starts no step
    options=$(srun --help 2>&1 || true)
    if [[ $options != *--container-image* ]]; then
        smoke_container_fail pyxis "srun has no --container-image option: pyxis is not installed or not \
listed in plugstack.conf on this cluster. Ask the admins for pyxis (github.com/NVIDIA/pyxis), or test \
the launch plumbing without a container: SMOKE_MODE=functional"
    fi
    smoke_container_pass pyxis "srun lists --container-image"
    if ! version=$(enroot version 2>/dev/null); then
        smoke_container_fail enroot "enroot not found on $host (pyxis runs it on every node): install \
enroot (github.com/NVIDIA/enroot) on the compute nodes"
    fi
    smoke_container_pass enroot "enroot $version on $host"
    machine=$(uname -m)
    case $machine in amd64) machine=x86_64 ;; arm64) machine=aarch64 ;; esac
    if [[ $arch != "$preset_arch" ]]; then
        smoke_container_pass arch "SMOKE_ARCH_OVERRIDE=$arch replaces the preset's $preset_arch: this run \
does not show that the $preset_arch image works" WARN
    fi
    if [[ $machine != "$arch" ]]; then
        smoke_container_fail arch "node $host is $machine, the image is for $arch: submit to $arch nodes \
(-p PARTITION or --constraint), or choose the preset for this hardware"
    fi
    [[ $arch != "$preset_arch" ]] || smoke_container_pass arch "node $machine, image $arch"
    if ! mkdir -p "$cache_dir"; then
        smoke_container_fail cache "cannot create the image cache $cache_dir: set SMOKE_IMAGE_CACHE to a \
writable folder on shared storage"
    fi
    case $image in
        /*|./*|../*)
            if [[ ! -f $image ]]; then
                smoke_container_fail image "image not found: $image does not exist on $host; local \
images must be on storage every node sees"
            fi
            local magic
            magic=$(head -c 4 "$image" || true)
            if [[ $magic != hsqs ]]; then
                smoke_container_fail image "$image is not a squashfs image (enroot import or mksquashfs makes one)"
            fi
            ;;
        *)
            # enroot reads registry tokens from this netrc file, and only when it is private.
            local creds=${ENROOT_CONFIG_PATH:-${XDG_CONFIG_HOME:-$HOME/.config}/enroot}/.credentials mode
            if [[ -e $creds ]]; then
                mode=$(stat -L -c %a "$creds")
                if [[ ! -O $creds || $mode != [46]00 ]]; then
                    smoke_container_fail credentials "$creds must be yours and mode 0600 (it is $mode): chmod 600 $creds"
                fi
                smoke_container_pass credentials "$creds (mode $mode)"
            else
                smoke_container_pass credentials "no $creds: anonymous pull (public images only); for a private \
registry add 'machine REGISTRY login USER password TOKEN' there, mode 0600"
            fi
            ;;
    esac
    # Enough room for one more image, unless it is already cached.
    local need_gib=${SMOKE_IMAGE_CACHE_MIN_GIB:-40} free_gib
    if [[ -f $image ]]; then
        need_gib=$(( $(stat -c %s "$image") / 2**30 + 1 ))
    fi
    free_gib=$(df -P -k "$cache_dir" | awk 'NR == 2 { print int($4 / 2^20) }' || true)
    free_gib=${free_gib:-0}
    if (( free_gib < need_gib )); then
        smoke_container_fail cache "$cache_dir has $free_gib GiB free, an import needs about $need_gib GiB: \
free space or set SMOKE_IMAGE_CACHE (and SMOKE_IMAGE_CACHE_MIN_GIB for a smaller image)"
    fi
    smoke_container_pass cache "$cache_dir: $free_gib GiB free"
}

# smoke_image_cache_name IMAGE ARCH: sets SMOKE_IMAGE_NAME, the cache file's name, keyed by more
# than the tag: the whole reference (registry, path, tag or digest), for a local file also its size
# and modification time.
smoke_image_cache_name() {
    local image=$1 arch=$2 key tag hash
    key=$image
    if [[ -f $image ]]; then
        key+=" $(stat -L -c '%s %Y' "$image")"
    fi
    tag=${image##*[:@/]}
    tag=${tag%.sqsh}
    hash=$(sha256sum <<< "$key")
    SMOKE_IMAGE_NAME=megatron-$arch-${tag//[^A-Za-z0-9._-]/_}-${hash:0:12}.sqsh
}

# smoke_sweep_partials CACHE_DIR: remove the partial imports of jobs that ended without cleaning up
# (killed by SIGKILL or a node failure mid-import: their EXIT trap never ran), each tens of GB. A
# partial is removed only when its job is not running on this cluster and the file has not been
# written for SMOKE_PARTIAL_STALE_MIN minutes (default 60): another cluster sharing the cache may
# reuse the job id, and its import keeps the file's mtime fresh. When squeue cannot answer, nothing
# is removed.
smoke_sweep_partials() {
    local cache_dir=$1 partial job state written now
    local stale_min=${SMOKE_PARTIAL_STALE_MIN:-60}
    now=$(date +%s)
    for partial in "$cache_dir"/*.partial-*-*.sqsh; do
        [[ -f $partial ]] || continue
        job=${partial##*.partial-}
        job=${job%%-*}
        [[ $job =~ ^[0-9]+$ && $job != "${SLURM_JOB_ID:-}" ]] || continue
        written=$(stat -c %Y "$partial") || continue
        (( now - written > stale_min * 60 )) || continue
        if ! state=$(squeue -h -j "$job" -o %T 2>&1); then
            # squeue says so for a job the controller no longer knows; anything else: ask later
            [[ $state == *"Invalid job id"* ]] || continue
            state=""
        fi
        case $state in
            PENDING|RUNNING|SUSPENDED|COMPLETING|CONFIGURING|RESIZING|REQUEUE*|STAGE_OUT|SIGNALING|STOPPED) continue ;;
        esac
        rm -f "$partial" && echo "smoke: removed $partial, an import left by job $job, which ended (${state:-gone}) before finishing it"
    done
}

# smoke_container_import IMAGE SQSH: one task imports and saves to a name no other job uses; only
# a complete squashfs is linked into place (atomic; a job that got there first keeps its file).
smoke_container_import() {
    local image=$1 sqsh=$2 partial status log=$SMOKE_OUT/import.log
    partial=${sqsh%.sqsh}.partial-$SLURM_JOB_ID-$$.sqsh
    echo "smoke: importing $image into $sqsh (one task; log $log)"
    set +e
    # One task writes the file; every task of a multi-task import would write it at once.
    srun --kill-on-bad-exit=1 --nodes=1 --ntasks=1 --container-image="$image" \
        --container-save="${sqsh%.sqsh}.partial-$SLURM_JOB_ID-$$.sqsh" --no-container-mount-home true > "$log" 2>&1
    status=$?
    set -e
    if [[ -n ${SMOKE_SIGNALLED:-} ]] || { (( status == 0 )) && ! unsquashfs -s "$partial" >/dev/null 2>&1; }; then
        rm -f "$partial"
        smoke_container_fail import "the import was cut off (${SMOKE_SIGNALLED:-the saved squashfs \
is incomplete}); the partial file was removed and nothing half-written is used: submit again, and give \
the job more time (--time) if the import is slow"
    fi
    if (( status != 0 )) && grep -q 'pyxis: container start failed' "$log"; then
        # The image was read (a registry pull or a local squashfs) but no process starts in it.
        rm -f "$partial"
        local said
        said=$(sed -n 's/.*pyxis:   *//p' "$log" | head -n1 || true)  # enroot's own line, as pyxis prints it
        said=${said:-no reason printed}
        smoke_container_fail start "the container did not start from $image: $said. The image must be a root filesystem with /bin/sh and python3 (unsquashfs -l \
IMAGE lists it); if it is, check enroot's hooks and ENROOT_* settings on the node (log $log)"
    fi
    if (( status != 0 )); then
        rm -f "$partial"
        smoke_import_failure "$image" "$log"
        smoke_container_fail import "$SMOKE_IMPORT_FAILURE"
    fi
    ln "$partial" "$sqsh" 2>/dev/null || echo "smoke: another job saved $sqsh first; using it"
    rm -f "$partial"
    smoke_container_pass import "$image saved to $sqsh"
}

# smoke_import_failure IMAGE LOG: sets SMOKE_IMPORT_FAILURE: why an import failed, and what to do,
# from enroot's messages.
smoke_import_failure() {
    local image=$1 log=$2 last
    last=$(grep -i -m1 -E 'error|denied|not found|no such' "$log" || true)
    [[ -n $last ]] || last=$(tail -n1 "$log")
    if grep -q -i -E '401|403|unauthorized|denied' "$log"; then
        SMOKE_IMPORT_FAILURE="pull denied for $image: put a token for its registry in enroot's credentials file \
(~/.config/enroot/.credentials: machine REGISTRY login USER password TOKEN, mode 0600) and check the \
name (registry#path:tag). enroot said: $last"
    elif grep -q -i -E '404|not found|manifest unknown|no such file' "$log"; then
        SMOKE_IMPORT_FAILURE="image not found: $image (check the name as registry#path:tag; a '/' after the registry \
makes enroot ask Docker Hub). enroot said: $last"
    elif grep -q -i 'no space left' "$log"; then
        SMOKE_IMPORT_FAILURE="no space left while importing $image: free space in the image cache or enroot's cache and \
data folders. enroot said: $last"
    else
        SMOKE_IMPORT_FAILURE="the import of $image failed (exit code of srun, log $log): $last"
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
        "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}" "${SMOKE_STEP_ENV[@]}" "$@" 2>&1 \
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
# runs it only when the probe failed, wrote nothing, its per-node figures disagree or (full mode)
# the job is below the preset; always; never. It writes
# localize.json and never fails the job itself: the verdict judges.
smoke_localize() {
    local python=${SMOKE_VERDICT_PYTHON:-python3}
    if [[ $SMOKE_MODE == functional ]]; then
        python=$SMOKE_PYTHON
    fi
    SMOKE_STEP_ARGS=$(printf '%s\n' "${SMOKE_SRUN_ARGS[@]}" "${SMOKE_CONTAINER_ARGS[@]}")
    SMOKE_STEP_PREFIX=$(printf '%s\n' "${SMOKE_STEP_ENV[@]}")  # HOME and caches in the run folder (container)
    export SMOKE_STEP_ARGS SMOKE_STEP_PREFIX
    # container-functional is judged as functional (CPU); its steps carry the container arguments.
    "$python" "$SMOKE_ROOT/scripts/localize.py" drive --out "$SMOKE_OUT" --mode "${SMOKE_MODE#container-}" \
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

# smoke_container_remove: the job's named container off every node. pyxis removes it itself only
# under container_scope=job; its default scope (global) keeps it, a whole unpacked image per node.
# Both names pyxis gives it are tried: pyxis_smoke-JOBID (global) and pyxis_JOBID_smoke-JOBID (job
# scope). The containers of our earlier jobs that were killed before their verdict go too, where
# they are on this job's nodes: a smoke-N container whose job N squeue no longer lists (when squeue
# cannot answer, only this job's own).
smoke_container_remove() {
    [[ -n ${SMOKE_CONTAINER_NAME:-} ]] || return 0
    local me ids alive
    me=$(id -un)
    ids=$(squeue -h -u "$me" -o %i 2>/dev/null) || ids=""
    alive=" ${ids//$'\n'/ } "
    [[ $alive == *" $SLURM_JOB_ID "* ]] || alive=""  # an answer that lacks this very job is no answer
    # shellcheck disable=SC2016  # expanded by the step's bash, from its arguments
    srun --ntasks-per-node=1 --kill-on-bad-exit=0 "${SMOKE_SRUN_ARGS[@]}" bash -c '
        for name in $(enroot list); do
            [[ $name =~ ^pyxis_([0-9]+_)?smoke-([0-9]+)$ ]] || continue
            job=${BASH_REMATCH[2]}
            if [[ $job == "$1" || ( -n $2 && $2 != *" $job "* ) ]]; then
                enroot remove --force "$name" && echo "$(hostname): removed $name"
            fi
        done' remove "$SLURM_JOB_ID" "$alive" > "$SMOKE_OUT/container-remove.log" 2>&1 \
        || echo "smoke: could not remove container $SMOKE_CONTAINER_NAME from every node (container-remove.log)" >&2
}

# smoke_verdict: combine every stage's result into verdict.json and print the table.
smoke_verdict() {
    smoke_container_remove
    local python=${SMOKE_VERDICT_PYTHON:-python3}
    if [[ $SMOKE_MODE == functional ]]; then
        python=$SMOKE_PYTHON
    fi
    "$python" "$SMOKE_ROOT/scripts/verdict.py" --run-dir "$SMOKE_OUT" \
        --preset "$SMOKE_ROOT/presets/$SMOKE_PRESET" --mode "$SMOKE_MODE"
}
