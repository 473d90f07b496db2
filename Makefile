# The two commands a new machine needs: `make run` and `make test`. Everything else is a step
# they call; each step is idempotent, so a second run reuses what the first built.
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
NISTCHAT := .venv/bin/nistchat
STAMP := .venv/.nistchat-installed
# Where the corpus is: NISTCHAT_CORPUS_DIR, else data/corpus (filled by `nistchat corpus download`),
# else a shared/ checkout beside this repository.
SIBLING_CORPUS := $(abspath ../shared/corpus/markdown)
export NISTCHAT_CORPUS_DIR ?= $(shell if [ -n "$$(ls data/corpus 2>/dev/null)" ]; then echo data/corpus; \
                                  elif [ -d "$(SIBLING_CORPUS)" ]; then echo "$(SIBLING_CORPUS)"; fi)

.PHONY: run test test-slow test-all venv models-run models-test assets browser ingest llama-server llama-baseline bench bench-first-run help

help:
	@echo "make run   - set up (venv, models, index) and serve on 0.0.0.0:$${NISTCHAT_PORT:-8000}"
	@echo "make test  - set up (venv, test models, browser) and run the test suite"

venv: $(STAMP)

$(STAMP): pyproject.toml scripts/build_llama.sh
	@echo "==> Python environment in .venv"
	@test -x $(PY) || python3 -m venv .venv
	@$(PIP) install --quiet --upgrade pip
	@echo "==> torch (CPU build), llama-cpp-python (the CPU variant scripts/build_llama.sh chooses, compiled once: ~3 min on 2 cores) and project dependencies"
	@$(PIP) install --quiet torch==2.13.0
	@bash scripts/build_llama.sh $(PY)
	@$(PIP) install --quiet -e '.[embedded,server,test]'
	@touch $(STAMP)

# llama.cpp's own server from the sources the llama-cpp-python sdist carries, for the same CPU
# variant and flags as the wheel; cached by version and flags (48 min once on 2 busy cores).
llama-server: venv
	@echo "==> llama-server (built once from the sdist's llama.cpp, cached under ~/.cache/nistchat/llama-server)"
	@bash scripts/build_llama_server.sh $(PY) >/dev/null

# The portable x86-64-v3 build beside the installed one, for `make bench` to measure the chosen
# variant against (the wheel is cached by its flags, like the installed one's).
LLAMA_BASELINE := data/llama-x86-64-v3
llama-baseline: venv
	@test -f $(LLAMA_BASELINE)/llama_cpp/nistchat-build.json || \
	  NISTCHAT_LLAMA_VARIANT=x86-64-v3 bash scripts/build_llama.sh $(PY) $(LLAMA_BASELINE)

models-run: venv
	@echo "==> Embedded models (reader: $${NISTCHAT_GGUF:-qwen2.5-coder-1.5b})"
	@$(NISTCHAT) models install

models-test: venv
	@echo "==> Embedded models for tests (reader: qwen2.5-coder-0.5b)"
	@$(NISTCHAT) models install --reader qwen2.5-coder-0.5b --no-second

# htmx goes inside the package (nistchat/static/vendor/, git-ignored) so a wheel built after this step carries it.
assets: venv
	@echo "==> htmx from the npm package into nistchat/static/vendor/"
	@$(PY) scripts/fetch_htmx.py

browser:
	@echo "==> Chromium for browser tests"
	@bash scripts/install_browser.sh

ingest: venv
	@if [ -z "$$NISTCHAT_CORPUS_DIR" ]; then \
	  echo "==> No corpus yet: downloading the official NIST PDFs into data/corpus"; \
	  $(NISTCHAT) corpus download || echo "!! No corpus: set NISTCHAT_CORPUS_DIR to a folder of the NIST documents."; \
	fi
	@echo "==> Index (corpus: $${NISTCHAT_CORPUS_DIR:-data/corpus}; reuses cached embeddings)"
	@$(NISTCHAT) ingest || echo "!! Ingestion failed; the app will say so on its status page."

run: models-run assets ingest
	@$(PY) -c "from nistchat.config import load_settings; raise SystemExit(not load_settings().web.admin_password_hash)" 2>/dev/null \
	  || echo "==> Admin login is off. To turn it on (one step): $(NISTCHAT) admin set-password"
	@echo "==> Serving on http://0.0.0.0:$${NISTCHAT_PORT:-8000}"
	@$(NISTCHAT) serve --host 0.0.0.0 --port $${NISTCHAT_PORT:-8000}

# pytest exits 5 when it collected no tests; that is a failure of the suite, reported plainly.
define run_pytest
	@echo "==> pytest $(1)"
	@$(PY) -m pytest $(1); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "!! pytest collected no tests"; fi; exit $$rc
endef

test: models-test assets browser
	$(call run_pytest,-q -m "not slow")

test-slow: models-run models-test assets browser llama-server
	$(call run_pytest,-q -m slow)

test-all: models-run models-test assets browser llama-server
	$(call run_pytest,-q -m "")

bench: models-run models-test llama-server llama-baseline
	@$(PY) scripts/bench_ingest.py
	@$(PY) scripts/bench_retrieval.py
	@$(NISTCHAT) eval retrieval --set all --note "make bench"  # stored: `nistchat eval runs` is the history
	@$(PY) scripts/bench_answer.py
	@$(PY) scripts/bench_llama_variants.py --reader qwen2.5-coder-1.5b $(LLAMA_BASELINE) \
	  $$($(PY) -c "import llama_cpp, pathlib; print(pathlib.Path(llama_cpp.__file__).parents[1])")
	@$(PY) scripts/bench_stages.py --compare answer.context_tokens=1200 --setting verify.mode=always \
	  --baseline $(LLAMA_BASELINE) --baseline-setting verify.context=passage
	@$(PY) scripts/bench_judge_context.py
	@$(PY) scripts/bench_reader_process.py
	@$(PY) scripts/bench_reader_server.py
	@$(PY) scripts/bench_load.py
	@$(PY) scripts/bench_first_run.py

# A newcomer's first quarter hour: fresh data and database, five questions while the second
# embedder builds, then the same five on the quiet server (~20 min on 2 cores).
bench-first-run: models-run
	@$(PY) scripts/bench_first_run.py
