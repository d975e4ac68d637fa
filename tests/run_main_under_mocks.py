"""Run `infra/__main__.py` exactly as the language host would (runpy), under mocks, with the
stack config given as JSON on argv; print the registered resources as JSON.

Run in a subprocess by tests/test_infra.py: a fresh interpreter is what the engine gives
the program, and it keeps the test process clear of CPython 3.11.7's shared-AST-state bug
(gh-106905), which this run otherwise trips for later imports in the same process.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pulumi

from infra import config as infra_config
from tests.pulumi_harness import RecordingMocks


def main() -> None:
    root = Path(sys.argv[1])
    config = json.loads(sys.argv[2])
    # The program resolves site_data/ and dist/ from its own location; point both at the
    # test's copy so nothing is written into the repository.
    original_init = infra_config.SiteConfig.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.setdefault("site_dir", root / "site_data")
        kwargs.setdefault("dist_dir", root / "dist")
        original_init(self, *args, **kwargs)

    infra_config.SiteConfig.__init__ = init  # type: ignore[method-assign]
    pulumi.runtime.set_all_config(config)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="agent-access", stack="dev", preview=False)

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_module("infra.__main__", run_name="__main__")

    program()
    json.dump(
        [{"typ": r.typ, "name": r.name, "inputs": r.inputs} for r in mocks.resources],
        sys.stdout,
        default=str,
    )


if __name__ == "__main__":
    main()
