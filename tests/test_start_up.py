"""A build loads only the modules its site uses (issue 22: the sample and a 100-page site
at least as fast as the old main, start-up included).

Each build runs in a fresh interpreter, as `python -m content_builder build` does, and
reports what it imported: a module imported by any earlier test would hide an import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import sites
from tests.conftest import REPO

#: What a site without Markdown pages must not load: the Markdown modules, markdown-it-py,
#: and xml.sax (which pulls urllib.request and http.client in with it).
MARKDOWN_ONLY = (
    "content_builder.markdown_tree",
    "content_builder.markdown_page",
    "content_builder.markdown_links",
    "content_builder.markdown_docusaurus",
    "markdown_it",
)
NEVER = ("xml.sax", "urllib.request", "http.client")

_BUILD_AND_LIST = """
import json, sys
from content_builder.build import build
from pathlib import Path
build(Path(sys.argv[1]), Path(sys.argv[2]))
print(json.dumps(sorted(sys.modules)))
"""


def _modules_of_a_build(site: Path, out: Path) -> set[str]:
    found = subprocess.run(
        [sys.executable, "-c", _BUILD_AND_LIST, str(site), str(out)],
        cwd=REPO,
        env={**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"},
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(found.stdout.splitlines()[-1]))


def test_a_site_without_markdown_loads_no_markdown_module(tmp_path: Path) -> None:
    site = sites.make_site(tmp_path / "site", sites.Shape(documents=4, faqs=3))
    loaded = _modules_of_a_build(site, tmp_path / "out")
    assert "content_builder.render.shards" in loaded  # the build ran in full
    assert sorted(loaded & {*MARKDOWN_ONLY, *NEVER}) == []


def test_a_site_with_markdown_pages_loads_them(tmp_path: Path) -> None:
    site = sites.make_site(tmp_path / "site", sites.Shape(documents=2, faqs=1))
    (site / "content" / "guide.md").write_text(
        "# A guide\n\nHow to start, in **Markdown**.\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    loaded = _modules_of_a_build(site, out)
    assert set(MARKDOWN_ONLY) <= loaded
    assert (out / "api" / "v1" / "content" / "guide.json").is_file()
    assert sorted(loaded & set(NEVER)) == []
