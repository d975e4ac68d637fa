# Every target bootstraps .venv itself: on a fresh machine `make test` is all it takes.
# Two installs: serving and building need only the runtime (pydantic, PyYAML) and the
# MCP server `serve` answers at /mcp (the `mcp` extra); tests, lint, benchmarks and
# deployment add the `dev` extra (Pulumi, boto3, moto, ...).
# Both resolve through constraints.txt, so every machine and CI get the same versions.
PYTHON ?= python3
PORT ?= 8000
# The site folder every target reads: `make serve SITE=../docs-site` (relative to this
# folder, or absolute), so a team keeps this project beside its docs and never edits
# site_data/, the sample.
SITE ?= site_data
VENV := .venv
BIN := $(VENV)/bin
SERVE_STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: serve build check init test lint preview up clean bench bench-compare lock mcp-layer

# A .venv made by another Python (another minor version, or one since removed) cannot
# be repaired in place: start it over, whatever the stamps say.
WANT_VERSION := $(shell $(PYTHON) -c 'import sys; print(sys.version_info[:2])' 2>/dev/null)
HAVE_VERSION := $(shell $(BIN)/python -c 'import sys; print(sys.version_info[:2])' 2>/dev/null)
ifneq ($(wildcard $(VENV)),)
ifneq ($(WANT_VERSION),)
ifneq ($(WANT_VERSION),$(HAVE_VERSION))
$(info .venv was made by another Python ($(or $(HAVE_VERSION),not runnable)), not $(PYTHON) $(WANT_VERSION): recreating it)
$(shell rm -rf $(VENV))
endif
endif
endif

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(SERVE_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e '.[mcp]'
	touch $@

$(DEV_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@ $(SERVE_STAMP)

# Builds in memory and serves the whole API with the CDN's headers on 127.0.0.1:$(PORT).
serve: $(SERVE_STAMP)
	$(BIN)/python -m content_builder serve --site "$(SITE)" --host 127.0.0.1 --port $(PORT) --watch

build: $(SERVE_STAMP)
	$(BIN)/python -m content_builder build --site "$(SITE)"

check: $(SERVE_STAMP)
	$(BIN)/python -m content_builder check --site "$(SITE)" --frozen

# `make init DOCS=../product/docs`: a starter site.yaml beside that docs tree (or in SITE=,
# when given on the command line: never in site_data/, the sample), and what it holds.
init: $(SERVE_STAMP)
	$(if $(DOCS),,$(error DOCS=path/to/your/docs is required: make init DOCS=../product/docs))
	$(BIN)/python -m content_builder init --docs "$(DOCS)"$(if $(filter command line,$(origin SITE)), --site "$(SITE)")

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# GitHub Actions security lint, offline (no GitHub API); every finding fixed (docs/decisions.md).
	$(BIN)/zizmor --offline --persona=auditor .github/workflows
	$(BIN)/python -m content_builder check --site "$(SITE)" --frozen
	# One pytest worker per CPU (pytest-xdist); the benchmark smoke tests share one worker,
	# so their fixture runs once (tests/conftest.py).
	$(BIN)/python -m pytest -q -n auto

# constraints.txt: the versions `pip install -e '.[dev]'` resolves today, for every extra.
# Rewrite it on purpose (a new dependency, an upgrade) and commit it with the change.
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	{ echo "# pip constraints for every extra: regenerate with \`make lock\` (see Makefile)."; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable | grep -v '^agent-access'; } > constraints.txt
	rm -rf .venv-lock

# Benchmarks (benchmarks/README.md): build and publish cost at N = 100, 1,000, 10,000,
# the publisher against `aws s3 sync` on a local moto server. Not part of `make test`,
# which keeps a small smoke version of each. awscli gets its own venv: it pins botocore.
AWSCLI_VENV := benchmarks/.venv-awscli
AWSCLI_STAMP := $(AWSCLI_VENV)/.installed

$(AWSCLI_STAMP):
	$(PYTHON) -m venv $(AWSCLI_VENV)
	$(AWSCLI_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AWSCLI_VENV)/bin/python -m pip install --quiet awscli
	touch $(AWSCLI_STAMP)

bench: $(DEV_STAMP) $(AWSCLI_STAMP)
	$(BIN)/python -m benchmarks.run

# The build of BASE (a commit; default: the main before issue 22) and this checkout's,
# side by side in one run (benchmarks/compare_builds.py), into benchmarks/README.md.
BASE ?= 95b495c
bench-compare: $(DEV_STAMP)
	rm -rf .bench-base && git worktree prune
	git worktree add --detach .bench-base $(BASE)
	$(BIN)/python -m benchmarks.compare_builds .bench-base --readme --markdown; \
	  status=$$?; git worktree remove --force .bench-base; exit $$status

# Deployment (needs the Pulumi CLI and AWS credentials; see README, Deploy). The program
# builds the site itself, with the frozen lock.
preview: $(DEV_STAMP)
	pulumi preview --diff

# verify retries for up to 15 minutes: the CDN serves old copies until the publish's
# invalidation completes.
# --refresh: a file deleted or rewritten in the bucket outside Pulumi is put back (drift
# repair, docs/decisions.md "Issue 24: drift repaired on every deploy"), as deploy.yml does.
up: $(DEV_STAMP)
	pulumi up --refresh
	$(BIN)/python -m content_builder verify "$$(pulumi stack output base_url)" --expect-from dist --retry-for 900

# The Lambda layer for `mcpServer: true` (infra/mcp_function.py): the mcp SDK and its
# dependencies as wheels for the function's runtime (python3.12, x86_64), not this machine's.
MCP_LAYER := build/mcp-lambda-layer
mcp-layer: | $(BIN)/python
	rm -rf $(MCP_LAYER)
	$(BIN)/python -m pip install --quiet --target $(MCP_LAYER)/python \
		--platform manylinux2014_x86_64 --implementation cp --python-version 3.12 \
		--only-binary=:all: 'mcp>=2.3,<3' 'pydantic>=2.11,<3'

# .dist.spare: the writer's spare output (content_builder/writer.py), beside dist.
# The build cache (content_builder/cache.py) lives outside the repository; only its own
# files are removed, never the folder a user pointed AGENT_ACCESS_CACHE_DIR at.
clean:
	rm -rf $(VENV) $(AWSCLI_VENV) dist .dist.spare .dist.staging-* .pytest_cache .ruff_cache .hypothesis
	@cache="$${AGENT_ACCESS_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/agent-access}"; \
	if [ "$$cache" != off ] && [ -d "$$cache" ]; then \
	  rm -f "$$cache"/build-*.pickle "$$cache"/build-*.pickle.latest "$$cache"/.build-* "$$cache"/.lock; \
	  rmdir "$$cache" 2>/dev/null || true; \
	fi
