# ONNX Workbench: `make run` serves the app, `make test` runs every test. Both set everything up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
ADDRESS ?= 127.0.0.1
CHROMIUM ?= /usr/bin/chromium

# Python caches compiled modules (__pycache__) even where the environment says not to: every job's worker imports
# the project's modules afresh, and the sandbox shows them read-only, so they are compiled once before serving or
# testing (compileall) and never again in each worker (about 0.1 CPU-s a worker).
unexport PYTHONDONTWRITEBYTECODE
COMPILE := $(PY) -m compileall -q -j 0 core ui app_pages streamlit_app.py > /dev/null

.PHONY: run test lint constraints sample-cards team cluster-extras bench-extras chromium cjk-font sandbox postgres netns cluster cluster-run cluster-stop clean graph-bundle browser-bundle messages runtime-openvino runtime-gpu

# pip says what it collects and installs as it goes (a first install takes minutes: torch alone is 200 MB)
PIP := $(PY) -m pip install --no-input -c constraints.txt

$(VENV)/.runtime: requirements.txt constraints.txt
	@test -x $(PY) || { echo "Creating the virtual environment in $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing torch first, the largest package: pip prints nothing while it unpacks and installs it (1-3 minutes)"
	$(PIP) $$(grep -m1 '^torch==' requirements.txt)
	@echo "Installing the app's other packages (requirements.txt: ONNX Runtime, Streamlit, transformers...)"
	$(PIP) -r requirements.txt
	@touch $@

# A team server's extras (PostgreSQL history, OpenID Connect sign-in) and the cluster's (Ray): core/extras.py
$(VENV)/.team: requirements-team.txt constraints.txt $(VENV)/.runtime
	@echo "Installing a team server's extras (requirements-team.txt)"
	$(PIP) --quiet -r requirements-team.txt
	@touch $@

$(VENV)/.cluster: requirements-cluster.txt constraints.txt $(VENV)/.runtime
	@echo "Installing the cluster's extras (requirements-cluster.txt: Ray)"
	$(PIP) --quiet -r requirements-cluster.txt
	@touch $@

team: $(VENV)/.team
cluster-extras: $(VENV)/.cluster

# what benchmarks/compare.py and benchmarks/tune.py measure the app against (Polygraphy, Olive); the tests never need them
bench-extras: $(VENV)/.dev
	$(PIP) --quiet -r requirements-bench.txt

$(VENV)/.dev: requirements-dev.txt requirements-models.txt constraints.txt $(VENV)/.team $(VENV)/.cluster
	@echo "Installing what the tests need (requirements-dev.txt, and the packaged models of requirements-models.txt)"
	$(PIP) --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	@touch $@

# Other builds of ONNX Runtime, each a runtime in an environment of its own (core/runtime/runtimes.py): .runtimes/NAME
# holds the build of requirements-NAME.txt alone (installed without its dependencies: the app's environment has them,
# pinned by constraints.txt), and a .pth file after its own site-packages adds .venv's, so it imports its own
# onnxruntime and everything else from .venv (no second 1.6 GB install). .ready is written once its onnxruntime
# imports and is not .venv's (core/runtime/probe.py prints what it offers).
RUNTIMES := .runtimes
$(RUNTIMES)/%/.ready: requirements-%.txt | $(VENV)/.runtime
	@echo "Building the runtime $* in $(RUNTIMES)/$* (requirements-$*.txt), beside $(VENV)"
	@rm -rf $(RUNTIMES)/$* && mkdir -p $(RUNTIMES)
	$(PY) -m venv --without-pip $(RUNTIMES)/$*
	@$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	  "$$($(RUNTIMES)/$*/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz_workbench_app.pth"
	$(PY) -m pip --python $(RUNTIMES)/$*/bin/python install --no-input --no-deps -r requirements-$*.txt \
	  $(addprefix -r ,$(OWN_TORCH))
	@cd $(CURDIR) && $(RUNTIMES)/$*/bin/python -c "import onnxruntime as o, sys; \
	  own = o.__file__.startswith('$(CURDIR)/$(RUNTIMES)/$*/'); print('runtime $*: onnxruntime', o.__version__, \
	  o.get_available_providers(), 'torch imported' if 'torch' in sys.modules else ''); sys.exit(0 if own else 1)"
	@test -z "$(OWN_TORCH)" || { cd $(CURDIR) && $(RUNTIMES)/$*/bin/python -c "import torch, sys; \
	  own = torch.__file__.startswith('$(CURDIR)/$(RUNTIMES)/$*/'); print('runtime $*: torch', torch.__version__, \
	  'for CUDA', torch.version.cuda); sys.exit(0 if own and torch.version.cuda else 1)"; }
	@touch $@

# The GPU runtime has a torch of its own too: a CUDA build (requirements-gpu-torch.txt), so that PyTorch eager runs on
# the GPU in its worker (bench --eager-device cuda); checked to be its own, not .venv's CPU build, and built for CUDA
$(RUNTIMES)/gpu/.ready: requirements-gpu-torch.txt
$(RUNTIMES)/gpu/.ready: OWN_TORCH = requirements-gpu-torch.txt

runtime-openvino: $(RUNTIMES)/openvino/.ready
runtime-gpu: $(RUNTIMES)/gpu/.ready

run: $(VENV)/.runtime sandbox
	@$(COMPILE)
	$(PY) -m core serve --port $(PORT) --address $(ADDRESS)

sandbox:
	@command -v bwrap >/dev/null || { \
	  echo "Installing Debian's bubblewrap: the sandbox every worker runs in"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q bubblewrap; }

chromium:
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium for the end-to-end tests"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

# the browser tests' screenshots of the Chinese pages need a font with the glyphs (else they show boxes)
cjk-font:
	@fc-list :lang=zh family 2>/dev/null | grep -q . || { \
	  echo "Installing Debian's fonts-noto-cjk, so that screenshots of the Chinese pages show their glyphs"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q fonts-noto-cjk; }

postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "Installing Debian's postgresql for the history's tests (a throwaway server each run)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q postgresql; }

netns:
	@command -v ip >/dev/null || { \
	  echo "Installing Debian's iproute2: the cluster's tests run each Ray node in its own network namespace"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q iproute2; }

# A two-node Ray cluster on this machine for trying the cluster backend (root: each node in its own network
# namespace; core/jobs/cluster/local.py): targets "head" and "node2", with Ray's token authentication (the token in
# the cluster's folder, /tmp/wbc-<checkout>/auth_token). Each checkout gets its own cluster, names and addresses
# (`make cluster` prints them); `make cluster-run` serves the app inside the head's namespace, joined to it;
# `make cluster-stop` removes it all.
cluster: $(VENV)/.cluster sandbox netns
	$(PY) -m core.jobs.cluster.local start

cluster-run: $(VENV)/.cluster sandbox
	$(PY) -m core.jobs.cluster.local serve --port $(PORT)

cluster-stop:
	$(PY) -m core.jobs.cluster.local stop

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# Two parts: most tests on four processes at once (two cores: most of a test's time is spent waiting on a worker, a
# server or the browser, and four keep both cores busy where two left a third of them idle; the longest files go
# first, tests/conftest.py), with lint beside them (mypy from cold takes a core for a minute or more), then the
# ones that need a quiet machine, one at a time
test: $(VENV)/.dev chromium cjk-font sandbox postgres netns runtime-openvino
	@mkdir -p test-artifacts
	@$(COMPILE)
	@$(MAKE) --no-print-directory lint > test-artifacts/lint.log 2>&1 & lint=$$!; \
	  $(PY) -m pytest -q -n 4 --dist loadfile --no-loadscope-reorder -m "not quiet"; tests=$$?; \
	  wait $$lint; linted=$$?; cat test-artifacts/lint.log; \
	  if [ $$linted -ne 0 ]; then echo "make test: lint failed (above)"; exit 1; fi; \
	  exit $$tests
	$(PY) -m pytest -q -m quiet

# The translation catalogs (docs/i18n.md): every string the code marks, into locale/messages.pot, and what is new or
# gone into each language's locale/<lang>/LC_MESSAGES/messages.po; translate there. The app compiles the .po files
# when it starts (core/i18n.py), so nothing else is built.
messages: $(VENV)/.runtime
	$(PY) -m babel.messages.frontend extract -F babel.cfg --no-location --sort-output --omit-header \
	  -o locale/messages.pot .
	$(PY) -m babel.messages.frontend update -i locale/messages.pot -d locale -D messages -w 120 \
	  --no-fuzzy-matching --ignore-obsolete

# Fix every package the venv holds at its version now (after changing a requirement and running the tests)
constraints: $(VENV)/.dev
	@{ sed -n '1,4p' constraints.txt; $(PY) -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints.new
	@mv constraints.new constraints.txt

# The samples' model cards (core/model/cards.py), after changing a sample or torch
sample-cards: $(VENV)/.runtime
	$(PY) -m core.model.cards

clean:
	rm -rf $(VENV) $(RUNTIMES) .pytest_cache .mypy_cache .ruff_cache test-artifacts

# The graph view's renderer: `npm ci` and esbuild in ui/graph_component (needs Node; ui/bundle.mjs is the build
# both bundles share: one minified IIFE, its CSS minified in); the bundle is committed, so run and test never need
# Node. tests/unit/test_graph_view.py fails when the bundle is older than its sources.
graph-bundle:
	cd ui/graph_component && npm ci --no-audit --no-fund && node build.mjs

# The model in the visitor's browser: the runner and ONNX Runtime Web's WASM and WebGPU builds (pinned in
# package.json, the .wasm gzipped) in ui/browser_component/dist, committed like the graph view's bundle;
# tests/unit/test_browser_bench.py fails when it is older than its sources.
browser-bundle:
	cd ui/browser_component && npm ci --no-audit --no-fund && node build.mjs
