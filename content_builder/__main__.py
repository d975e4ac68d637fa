"""`python -m content_builder ...`, as before: the front door (agent_access.cli) under its
old name. The only module of the build that imports above it (tests/test_layout.py)."""

from agent_access.cli import run

run()
