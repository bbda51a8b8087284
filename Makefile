# The one place commands live. `make demo` and `make test` are the README's two commands.
VENV ?= .venv
PY := $(VENV)/bin/python
DEPS := $(VENV)/.deps-installed
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: install system-deps demo test test-rust test-python lint format docs bench fidelity fuzz crash clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEPS): $(PY) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(DEPS)

## install: the virtualenv, its packages, and iomimic built in release mode into it
install: $(DEPS)
	maturin develop --release --quiet

## demo: set everything up and run `iomimic demo` on the built-in example
demo: install
	iomimic demo

## system-deps: OS packages some tests drive (fio, headless Chromium), installed when missing
# and this is root on Debian; otherwise those tests skip, saying why.
SYSTEM_PACKAGES := fio chromium
system-deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing$$missing (OS packages the tests use)"; \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y -q $$missing >/dev/null 2>&1 || \
			{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $$missing >/dev/null 2>&1; } || \
			echo "note: could not install$$missing; the tests that need them skip"; \
		else echo "note:$$missing missing and not root; the tests that need them skip"; fi; \
	fi

## test: set everything up, lint, and run every Rust and Python test
test: install system-deps lint test-rust test-python

test-rust:
	cargo test --workspace --quiet
	@# timed tests, alone: with the others on both cores a schedule's lag measures them, not the engine
	cargo test -p iomimic-core --lib --quiet -- --ignored --exact realio::tests::open_loop_keeps_the_schedule

test-python:
	$(PY) -m pytest -q

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches

format:
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches

## docs: regenerate the command reference at the end of docs/cli.md from --help
docs: install
	$(PY) -m iomimic.cli.reference --write

## bench: the speed benchmarks, printing ratios against references measured in the same run
# (numpy's BLAS threads would spin on the cores being measured; the scripts load numpy first)
bench: export OPENBLAS_NUM_THREADS = 1
bench: install
	$(PY) benches/read_msr.py
	$(PY) benches/read_parquet.py
	$(PY) benches/characterize.py
	$(PY) benches/characterize_scale.py
	$(PY) benches/model.py
	$(PY) benches/generate_scale.py
	$(PY) benches/simulate.py
	$(PY) benches/simulate_scale.py
	$(PY) benches/train_scale.py
	$(PY) benches/realio.py
	$(PY) benches/openloop.py
	$(PY) benches/openloop.py --neighbour --seconds 10 --rounds 7
	$(PY) benches/cache.py
	$(PY) benches/mrc.py
	$(PY) benches/ray_cluster.py
	$(PY) benches/ray_cluster.py --characterize

## fidelity: how close synthetic traces come to their originals, over many seeds (SEEDS=27 to
# compare builds: one generation of a bursty trace says little)
fidelity: install
	$(PY) benches/fidelity.py --seeds $${SEEDS:-9}

## fuzz: every trace reader against many mutated real samples (the test run does a few dozen)
fuzz:
	PROPTEST_CASES=$${PROPTEST_CASES:-20000} PROPTEST_RNG_SEED=$${PROPTEST_RNG_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')} \
		cargo test --release -p iomimic-core --test it fuzz -- --nocapture

## crash: the off-loading layer's crash tests over many seeded schedules (the test run does 8)
crash:
	OFFLOAD_CRASH_SEEDS=$${OFFLOAD_CRASH_SEEDS:-200} cargo test --release -p iomimic-core --test it offload_crash -- --nocapture

clean:
	rm -rf target $(VENV)
