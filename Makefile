# Two commands set everything up on a fresh machine: `make validate` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: validate test bench bench-e2e fault-matrix demo demo-container clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# Bytecode for the editable install, as pip writes it for installed packages: Python reads it even
# where PYTHONDONTWRITEBYTECODE keeps it from writing its own (about 0.1 s per run here).
.venv/.compiled: $(STAMP) $(wildcard validator/*.py validator/rules/*.py)
	$(PY) -m compileall -q validator
	touch $@

validate: $(STAMP) .venv/.compiled
	$(PY) -m validator --summary

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP) .venv/.compiled
	$(PY) bench/bench_validator.py
	$(PY) bench/bench_bounds.py
	$(PY) bench/bench_verdict_logs.py  # the verdict's log readers on hostile logs (linear in size)
	$(PY) bench/bench_srun_lines.py  # 10,000 srun lines: every rule linear in the input (issue 28)
	$(PY) bench/bench_repository_search.py  # launch-time-limit's search of the job's repository, to its bounds
	$(PY) bench/group_noise.py  # localization's group tests under healthy spread (simulation)

# A local 2-node Slurm cluster (needs root), the ethernet-only preset in functional mode, the verdict.
# demo-container: the same in container-functional mode under real pyxis and enroot (built once per
# machine), in the STAND-IN image (scripts/standin-image: Debian's python3 and CPU torch, not the
# Megatron image); the verdict runs on the host with its python3.
demo: DEMO_EXPORTS = SMOKE_MODE=functional,SMOKE_PYTHON=$(CURDIR)/$(PY)
demo-container: DEMO_UP = --pyxis
demo-container: DEMO_EXPORTS = SMOKE_MODE=container-functional,SMOKE_IMAGE=$$(scripts/standin-image)
demo demo-container: $(STAMP)
	scripts/local-cluster up --nodes 2 $(DEMO_UP)
	@set -e; export SLURM_CONF=/run/smoke-cluster/slurm.conf; \
	job=$$(sbatch --parsable --nodes 2 --export=NONE,$(DEMO_EXPORTS) presets/ethernet-only/train.sbatch); \
	echo "$@: submitted job $$job"; \
	while squeue -h -j $$job 2>/dev/null | grep -q .; do sleep 2; done; \
	grep '^verdict:' smoke-ethernet-only-$$job.out || true; \
	echo "$@: job log smoke-ethernet-only-$$job.out, run folder smoke-runs/$$job/"; \
	scripts/local-cluster down

# Submit-to-verdict time of a 2-node job on the local Slurm cluster (needs root).
bench-e2e: $(STAMP)
	$(PY) bench/bench_e2e.py

# Fault injection on the local 4-node Slurm cluster (needs root): FAULT_RUNS runs of each fault,
# faulty node chosen at random; prints a table per fault. Localization's faults (docs/localization.md),
# then the hang watchdog's during training, both modes alternating, two 4-node jobs at once on an
# 8-node cluster (docs/hang-watchdog.md).
fault-matrix: $(STAMP)
	$(PY) bench/fault_matrix.py
	$(PY) bench/hang_matrix.py --mode both --lanes 2

clean:
	rm -rf $(VENV) .pytest_cache
