# Every target bootstraps .venv itself: on a fresh machine `make test` is all it takes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve build check test lint preview up clean bench mcp-layer

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Builds in memory and serves the whole API with the CDN's headers on 127.0.0.1:8000.
serve: $(STAMP)
	$(BIN)/python -m content_builder serve --host 127.0.0.1 --port 8000 --watch

build: $(STAMP)
	$(BIN)/python -m content_builder build

check: $(STAMP)
	$(BIN)/python -m content_builder check --frozen

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP)
	$(BIN)/ruff check .
	# GitHub Actions security lint, offline (no GitHub API); every finding fixed (docs/decisions.md).
	$(BIN)/zizmor --offline --persona=auditor .github/workflows
	$(BIN)/python -m content_builder check --frozen
	$(BIN)/python -m pytest -q

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

bench: $(STAMP) $(AWSCLI_STAMP)
	$(BIN)/python -m benchmarks.run

# Deployment (needs the Pulumi CLI and AWS credentials; see README, Deploy). The program
# builds the site itself, with the frozen lock.
preview: $(STAMP)
	pulumi preview --diff

# verify retries for up to 15 minutes: the CDN serves old copies until the publish's
# invalidation completes.
up: $(STAMP)
	pulumi up
	$(BIN)/python -m content_builder verify "$$(pulumi stack output base_url)" --expect-from dist --retry-for 900

# The Lambda layer for `mcpServer: true` (infra/mcp_function.py): the mcp SDK and its
# dependencies as wheels for the function's runtime (python3.12, x86_64), not this machine's.
MCP_LAYER := build/mcp-lambda-layer
mcp-layer: $(STAMP)
	rm -rf $(MCP_LAYER)
	$(BIN)/python -m pip install --quiet --target $(MCP_LAYER)/python \
		--platform manylinux2014_x86_64 --implementation cp --python-version 3.12 \
		--only-binary=:all: 'mcp>=2.3,<3' 'pydantic>=2.6,<3'

clean:
	rm -rf $(VENV) $(AWSCLI_VENV) dist .pytest_cache .ruff_cache .hypothesis
