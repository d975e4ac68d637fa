"""The descriptions every agent reads first stay small as the site grows (ID_LIST_LIMIT).

Past the limit, the discovery document's `content` maps and the OpenAPI's id enums list
no ids (the content index does); what stays is enough to reach every entry: the counts,
the URL templates, the id pattern. `verify` still reaches every entry through the index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_client.verify import verify
from agent_contract import paths
from agent_contract.endpoints import ID_LIST_LIMIT
from benchmarks import sitegen
from content_builder.build import discovery_path, plan
from tests.conftest import SPEC_SITE, TEST_BASE_URL, running_server

#: Both kinds past the limit: sitegen writes N documents (and the overview) and N FAQ.
GROWN = ID_LIST_LIMIT + 5


@pytest.fixture(scope="module")
def grown_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sitegen.generate(tmp_path_factory.mktemp("grown") / "site_data", GROWN).root


@pytest.fixture(scope="module")
def grown(grown_site: Path) -> dict[str, bytes]:
    return {a.path: a.body for a in plan(grown_site, TEST_BASE_URL).artifacts}


def test_a_small_site_lists_every_id_and_says_how_many() -> None:
    files = {a.path: a.body for a in plan(SPEC_SITE, TEST_BASE_URL).artifacts}
    content = json.loads(files[discovery_path(SPEC_SITE)])["content"]
    index = json.loads(files[paths.CONTENT_INDEX])["documents"]
    assert len(content["documents"]) + len(content["faq"]) == len(index)
    assert content["total_documents"] == len(content["documents"])
    assert content["total_faq"] == len(content["faq"])
    operations = json.loads(files[paths.OPENAPI])["paths"]
    enum = operations[paths.DOCUMENT_TEMPLATE]["get"]["parameters"][0]["schema"]["enum"]
    assert enum == list(content["documents"])


def test_past_the_limit_discovery_and_openapi_list_no_ids_yet_reach_every_entry(
    grown_site: Path, grown: dict[str, bytes]
) -> None:
    discovery = json.loads(grown[discovery_path(grown_site)])
    content = discovery["content"]
    index = json.loads(grown[paths.CONTENT_INDEX])["documents"]
    documents = [e for e in index if "/api/v1/content/" in e["api_url"]]
    faqs = [e for e in index if "/api/v1/faq/" in e["api_url"]]
    assert len(documents) > ID_LIST_LIMIT and len(faqs) > ID_LIST_LIMIT
    assert content["documents"] == {} and content["faq"] == {}
    assert (content["total_documents"], content["total_faq"]) == (len(documents), len(faqs))
    # Every entry's api_url is the template filled with its id.
    for template, entries, name in (
        (content["document_url"], documents, "document_id"),
        (content["faq_url"], faqs, "faq_id"),
    ):
        for entry in entries:
            assert template.replace("{" + name + "}", entry["id"]) == entry["api_url"]
    # The entry point an agent reads first does not grow with the site.
    assert len(grown[discovery_path(grown_site)]) < 40_000
    operations = json.loads(grown[paths.OPENAPI])["paths"]
    assert len(grown[paths.OPENAPI]) < 200_000
    for template, entries in (
        (paths.DOCUMENT_TEMPLATE, documents),
        (paths.FAQ_TEMPLATE, faqs),
        (paths.DOCUMENT_MARKDOWN_TEMPLATE, documents),
        (paths.FAQ_MARKDOWN_TEMPLATE, faqs),
    ):
        (parameter,) = operations[template]["get"]["parameters"]
        schema = parameter["schema"]
        assert "enum" not in schema
        assert paths.CONTENT_INDEX in parameter["description"]
        assert all(re.fullmatch(schema["pattern"], entry["id"]) for entry in entries)
        assert schema["examples"][0] in {entry["id"] for entry in entries}


def test_verify_reaches_every_entry_of_a_grown_site_through_the_index(
    grown_site: Path,
) -> None:
    with running_server(grown_site) as server:
        report = verify(server.base_url)
    failed = [finding for finding in report.findings if not finding.ok]
    assert not failed, failed[:5]
    subjects = {finding.subject for finding in report.findings}
    index_ids = [p for p in subjects if p.startswith("/api/v1/faq/") and p.endswith(".md")]
    assert len(index_ids) > ID_LIST_LIMIT  # every FAQ twin, though no list names them
