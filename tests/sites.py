"""Valid sites of any shape, written the way an author would: for the "any site" tests.

`benchmarks/sitegen.py` makes large realistic sites with as many FAQ entries as
documents; these are the other shapes a site owner reaches: one document and no FAQ,
more FAQ entries than documents, a renamed brand, Unicode everywhere, a document
removed. Each site links its entries to each other (the link checks see real links)
and gets its lock from the builder itself.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.conftest import SPEC_SITE, run_cli

UNICODE_WORDS = ["Café", "naïve", "Zürich", "日本語の文書", "Ελληνικά", "emoji ✨", "São Paulo"]


@dataclass(frozen=True)
class Shape:
    documents: int
    faqs: int
    brand: str = "service"
    name: str = "Example"
    unicode: bool = False
    #: Only what a new site needs (issue 23): site.yaml's identity keys and content/; no
    #: architecture.yaml, on-site-agent.yaml, faq/ or search-questions.yaml.
    minimal: bool = False


#: The site.yaml keys a new site must write (the rest have defaults).
IDENTITY_KEYS = ("brand", "name", "description", "website", "base_url", "contact")


def _dump(path: Path, data: object) -> None:
    # One line per value: remove_document finds a link sentence as the author wrote it.
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**6)
    path.write_text(text, encoding="utf-8")


def document_ids(shape: Shape) -> list[str]:
    return ["site", *(f"topic-{index:03d}" for index in range(1, shape.documents))]


def faq_ids(shape: Shape) -> list[str]:
    return [f"q{index:03d}-question" for index in range(1, shape.faqs + 1)]


def _title(shape: Shape, kind: str, index: int) -> str:
    if not shape.unicode:
        return f"{kind} number {index}"
    word = UNICODE_WORDS[index % len(UNICODE_WORDS)]
    return f"{word} — {kind} {index} « {UNICODE_WORDS[(index + 3) % len(UNICODE_WORDS)]} »"


def link_sentence(target: str) -> str:
    return f"See {{base_url}}/api/v1/{target}.json for more."


def make_site(root: Path, shape: Shape) -> Path:
    """Write a valid site_data folder of `shape` at `root` and refresh its lock."""
    if root.exists():
        shutil.rmtree(root)
    (root / "content").mkdir(parents=True)
    config = yaml.safe_load((SPEC_SITE / "site.yaml").read_text(encoding="utf-8"))
    config.update(brand=shape.brand, name=shape.name)
    config.pop("search_eval", None)
    if shape.unicode:
        config["description"] = "Ünïcödé site — " + " ".join(UNICODE_WORDS)
    if shape.minimal:  # a new site, in its own words (the fixture's describe Parlance)
        config = {key: config[key] for key in IDENTITY_KEYS}
        config["description"] = f"How to use {shape.name}, the product."
    _dump(root / "site.yaml", config)
    if not shape.minimal:
        _write_architecture_and_agent(root, shape)
        (root / "faq").mkdir()
    _write_entries(root, shape)
    refresh_lock(root)
    return root


def _write_architecture_and_agent(root: Path, shape: Shape) -> None:
    architecture = yaml.safe_load((SPEC_SITE / "architecture.yaml").read_text(encoding="utf-8"))
    if not shape.faqs:  # what the owner of a site without FAQ writes: no FAQ resource type
        layer = architecture["data_layer"]
        layer["resource_types"] = [
            r for r in layer["resource_types"] if "/faq/" not in r["endpoint"]
        ]
    _dump(root / "architecture.yaml", architecture)
    agent = yaml.safe_load((SPEC_SITE / "on-site-agent.yaml").read_text(encoding="utf-8"))
    agent["configuration"]["knowledge_sources"] = [
        "{base_url}/api/v1/content/index.json",
        "{discovery_url}",
        "{base_url}/llms-full.txt",
    ]
    _dump(root / "on-site-agent.yaml", agent)


def _write_entries(root: Path, shape: Shape) -> None:
    documents, faqs = document_ids(shape), faq_ids(shape)
    if faqs:
        (root / "faq").mkdir(exist_ok=True)
    for index, document_id in enumerate(documents):
        links = [link_sentence(f"content/{documents[(index + 1) % len(documents)]}")]
        if faqs:
            links.append(link_sentence(f"faq/{faqs[index % len(faqs)]}"))
        body = f"{_title(shape, 'Section', index)} explains {{name}}. " + " ".join(links)
        data: dict[str, object] = {
            "id": document_id,
            "title": _title(shape, "Document", index),
            "content_type": "feature" if index % 4 == 3 else ("page" if index % 2 else "product"),
            "description": f"What {_title(shape, 'topic', index)} covers.",
            "canonical_url": f"https://www.example.test/{document_id}",
            "order": index * 10,
        }
        if index == 0:
            data["content_type"] = "page"
        if data["content_type"] == "feature":
            data["content"] = {
                "headline": _title(shape, "Headline", index),
                "summary": body,
                "capabilities": {
                    "discovery": {
                        "title": "Discovery",
                        "description": "Start at the discovery document.",
                        "endpoints": ["{discovery_url}", "{base_url}/api/v1/content/index.json"],
                    }
                },
                "for_agent_developers": "Read {discovery_url} first.",
            }
        else:
            data["content"] = {
                "headline": _title(shape, "Headline", index),
                "sections": [
                    {"title": _title(shape, "Part", index), "body": body},
                    {"title": "More", "body": f"Contact {{contact}} about {document_id}."},
                ],
            }
        _dump(root / "content" / f"{document_id}.yaml", data)
    for index, faq_id in enumerate(faqs):
        target = documents[index % len(documents)]
        _dump(
            root / "faq" / f"{faq_id}.yaml",
            {
                "id": faq_id,
                "question": _title(shape, "Question", index) + "?",
                "answer": "The answer, in {name}'s words.\n\n" + link_sentence(f"content/{target}"),
            },
        )


def refresh_lock(root: Path) -> None:
    """Run `build` as an author would after an edit (it writes content.lock.json)."""
    result = run_cli("build", "--site", root, "--out", root.parent / (root.name + "-dist"))
    assert result.code == 0, result.err


def remove_document(root: Path, document_id: str) -> None:
    """Delete a document and every sentence that links to it, as its author would."""
    (root / "content" / f"{document_id}.yaml").unlink()
    sentence = link_sentence(f"content/{document_id}")
    for path in sorted(root.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if sentence in text:
            path.write_text(text.replace(" " + sentence, "").replace(sentence, ""), "utf-8")


def rename_brand(root: Path, brand: str) -> None:
    """The rename the format doc promises: one line of site.yaml."""
    path = root / "site.yaml"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = [f"brand: {brand}\n" if line.startswith("brand:") else line for line in lines]
    assert edited != lines, "site.yaml has a brand line"
    path.write_text("".join(edited), encoding="utf-8")


# --- a real docs page in a site where the keyword budget bites (issue 23, item 8) --------

#: The prose of an installation page as docs tools publish it: words people search with.
INSTALL_PROSE = (
    "Install the tool with the standalone installer on macOS, Linux or Windows. On "
    "Windows, run the installer from PowerShell; on macOS and Linux, from a terminal. "
    "The installer downloads a prebuilt binary, verifies its checksum and adds it to "
    "your PATH. Upgrading later replaces the binary in place; uninstalling removes it "
    "and its cache. Behind a corporate proxy, set the proxy variables first. Docker "
    "users can pull the published image instead."
)

#: What the same page's code blocks hold: commands, flags, an image reference, hashes,
#: placeholders, a long token. Identifiers and not-words, none a word people search.
INSTALL_CODE = """\
```console
$ curl -LsSf https://astral.example/uv/install.sh | sh
$ powershell -ExecutionPolicy ByPass -c "irm https://astral.example/uv/install.ps1 | iex"
$ docker pull ghcr.io/astral-sh/uv:0.5.1
$ docker run --rm ghcr.io/astral-sh/uv:0.5.1-bookworm-slim uvx --from httpie http
$ export UV_INSTALL_DIR=xxxxxxxx UV_NO_MODIFY_PATH=1 XDG_BIN_HOME=$HOME/.local/bin
$ sha256sum uv-x86_64-unknown-linux-gnu.tar.gz
3f2a9c1b7d4e8f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718  uv-x86_64.tar.gz
$ cosign verify-blob --bundle uv.sigstore aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=
$ gh attestation verify --owner astral-sh --predicate-type slsaprovenance1 uvbinary
$ brew install uv && winget install --id=astral-sh.uv -e && scoop install main/uv
$ cargo install --git https://github.example/astral-sh/uv --locked uvworkspace
$ pipx install uv --pip-args=--no-cache-dir --index-url=$PIP_INDEX_URL
```
"""


def add_installation_page(root: Path, document_id: str = "installation") -> None:
    """An installation page, its prose first and its commands in a fenced block, as the
    body of one section (CommonMark, as a Markdown page's section body is)."""
    _dump(
        root / "content" / f"{document_id}.yaml",
        {
            "id": document_id,
            "title": "Installing the command line tool",
            "content_type": "page",
            "description": "Every way to install, upgrade and remove it.",
            "canonical_url": f"https://www.example.test/{document_id}",
            "content": {
                "headline": "Installation",
                "sections": [
                    {
                        "title": "Standalone installer",
                        "body": INSTALL_PROSE + "\n\n" + INSTALL_CODE,
                    },
                ],
            },
        },
    )


def mention_windows(root: Path, every: int = 4) -> None:
    """Windows in the prose of every `every`th document: a word a site uses often enough
    that its idf is below a one-page identifier's, as on real docs sites."""
    for index, path in enumerate(sorted((root / "content").glob("topic-*.yaml"))):
        if index % every:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        body = data["content"]
        if "sections" in body:
            body["sections"][0]["body"] += " It also runs on Windows."
        else:
            body["summary"] += " It also runs on Windows."
        _dump(path, data)


#: Questions a user of the installation page asks, written before looking at its index.
INSTALL_QUESTIONS = [
    ("how do I install it on windows", ["installation"]),
    ("install with powershell on windows", ["installation"]),
    ("standalone installer for macos", ["installation"]),
    ("linux install from a terminal", ["installation"]),
    ("upgrading to a newer version", ["installation"]),
    ("uninstalling and removing the cache", ["installation"]),
    ("installing behind a corporate proxy", ["installation"]),
    ("does the installer verify a checksum", ["installation"]),
    ("pull the docker image", ["installation"]),
    ("add the binary to my PATH", ["installation"]),
]


def write_questions(root: Path, questions: list[tuple[str, list[str]]]) -> None:
    """search-questions.yaml with a `questions` set only (no `held_out`)."""
    _dump(
        root / "search-questions.yaml",
        {"questions": [{"q": q, "answers": answers} for q, answers in questions]},
    )
