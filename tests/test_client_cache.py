"""The agent client parses the search index once per ETag, not once per query."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client import client as client_module
from agent_client.client import AgentClient, rank
from agent_edge.serve import load_edge
from tests.conftest import running_server


def test_search_parses_the_index_once_per_etag(
    monkeypatch: pytest.MonkeyPatch, site_copy: Path
) -> None:
    validations: list[int] = []
    real = client_module.SearchIndex.model_validate

    def counting(data: object) -> object:
        validations.append(1)
        return real(data)

    monkeypatch.setattr(client_module.SearchIndex, "model_validate", counting)
    with running_server(site_copy) as server:
        agent = AgentClient(server.base_url)
        first = agent.keyword_search("how do agents find documents")
        again = agent.keyword_search("how do agents find documents")
        other = agent.keyword_search("cache headers")
        assert [h.id for h in first] == [h.id for h in again] and first
        assert other
        assert len(validations) == 1, "the unchanged index was validated again"
        assert agent.requests.get(304, 0) >= 2  # each search still confirmed freshness
        # The cached, prepared index ranks exactly as the plain function does.
        index = agent.search_index()
        for query in ("how do agents find documents", "cache headers", "deploying"):
            assert [h.id for h in rank(index, query)] == [h.id for h in agent.keyword_search(query)]

        # Other content at the same URL (a new ETag) is parsed afresh.
        faq = site_copy / "faq" / "q01-difference.yaml"
        text = faq.read_text(encoding="utf-8")
        assert "A sitemap tells a crawler" in text
        faq.write_text(text.replace("A sitemap tells", "A zyzzyva sitemap tells"), "utf-8")
        assert not agent.keyword_search("zyzzyva")
        server.edge = load_edge(site_copy, server.base_url)
        assert [h.id for h in agent.keyword_search("zyzzyva")] == ["q01-difference"]
        assert len(validations) == 2
