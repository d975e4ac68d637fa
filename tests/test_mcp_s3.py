"""The MCP Lambda's source: the bucket read on demand (agent_mcp/s3.py), on moto.

What a deployment relies on: an unchanged file costs a 304 and no body; a publish is seen
at the next read, with no redeploy; the cache stays within its bytes; a missing key is
MissingFile (not an error of the server); llms-full.txt's parts are ranged reads; and a
publish that changes the manifest or the index gives the handler a new catalog.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agent_contract import paths
from agent_mcp import lambda_handler, paging
from agent_mcp.catalog import Catalog
from agent_mcp.s3 import S3Files
from agent_mcp.sources import MissingFile
from benchmarks import sitegen
from content_builder.build import plan
from tests.conftest import TEST_BASE_URL

BUCKET = "agent-access-content-0a1b2c3"
SECRET = "s3-origin-secret-0123456789abcdefghijk"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    site = sitegen.generate(tmp_path_factory.mktemp("mcp-s3") / "site_data", 60)
    return {a.path: a.body for a in plan(site.root, TEST_BASE_URL).artifacts}


@pytest.fixture
def s3(files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        yield bucket_holding(BUCKET, files)


def bucket_holding(bucket: str, files: dict[str, bytes]) -> Any:
    """An S3 client (inside mock_aws) whose `bucket` holds the published `files`."""
    client = boto3.client("s3", region_name="eu-west-1")
    client.create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    for path, body in files.items():
        client.put_object(Bucket=bucket, Key=path.lstrip("/"), Body=body)
    return client


def test_an_unchanged_file_is_a_304_and_a_publish_is_seen_at_once(s3: Any, files) -> None:
    source = S3Files(BUCKET, s3)
    faq = next(p for p in files if p.startswith("/api/v1/faq/") and p.endswith(".json"))
    assert source.read(faq) == files[faq]
    assert source.read(faq) == files[faq]
    assert (source.requests, source.not_modified) == (2, 1)  # the second cost no body
    s3.put_object(Bucket=BUCKET, Key=faq.lstrip("/"), Body=b'{"edited": true}\n')
    assert source.read(faq) == b'{"edited": true}\n'  # the next read, no redeploy
    assert source.not_modified == 1
    with pytest.raises(MissingFile):
        source.read("/api/v1/faq/no-such-entry.json")


def test_the_cache_stays_within_its_bytes(s3: Any, files: dict[str, bytes]) -> None:
    documents = sorted(p for p in files if p.startswith("/api/v1/content/") and "index" not in p)
    limit = 3 * max(len(files[p]) for p in documents)
    source = S3Files(BUCKET, s3, max_bytes=limit, max_object=len(files[paths.CONTENT_INDEX]) - 1)
    for path in documents:
        assert source.read(path) == files[path]
        assert source.held_bytes <= limit
    assert source.etag(documents[-1]) is not None  # the most recent is kept
    assert source.etag(documents[0]) is None  # the least recent went first
    source.read(paths.CONTENT_INDEX)
    assert source.etag(paths.CONTENT_INDEX) is None  # over max_object: never kept


def test_llms_full_parts_are_ranged_reads_of_the_bucket(s3: Any, files) -> None:
    source = S3Files(BUCKET, s3)
    whole = files[paths.LLMS_FULL_TXT]
    assert source.size(paths.LLMS_FULL_TXT) == len(whole)
    assert source.read_range(paths.LLMS_FULL_TXT, 10, 20) == whole[10:20]
    catalog = Catalog(source)
    count = paging.part_count(len(whole))
    assert count > 1, "the site is large enough to page"
    parts = [catalog.call("get_full_content", {"part": n}).text for n in range(1, count + 1)]
    assert "".join(parts).encode() == whole
    assert source.etag(paths.LLMS_FULL_TXT) is None  # parts are never kept whole


def handler_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = lambda_handler.handler(tool_event(name, arguments))
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])["result"]


def tool_event(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    event = {
        "version": "2.0",
        "rawPath": "/mcp",
        "headers": {
            "x-origin-verify": SECRET,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        },
        "requestContext": {"http": {"method": "POST"}},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }
    return event


def test_before_the_first_publish_the_handler_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack creates the function before the publish fills the bucket: an empty
    bucket is a 503 naming the missing publish, not a 500 logged as a bug."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("MCP_BUCKET", BUCKET)
    monkeypatch.setenv(lambda_handler.SECRET_ENV, SECRET)
    monkeypatch.setattr(lambda_handler, "_BUCKET", None)
    with mock_aws():
        client = bucket_holding(BUCKET, {})
        answer = lambda_handler.handler(tool_event("get_content_index", {}))
        assert answer["statusCode"] == 503, answer
        error = json.loads(answer["body"])
        assert error["error"] == "not_published" and "pulumi up" in error["message"]
        # Without the secret, still 403: a stranger learns nothing of the bucket.
        stranger = tool_event("get_content_index", {})
        del stranger["headers"]["x-origin-verify"]
        assert lambda_handler.handler(stranger)["statusCode"] == 403
        # The first publish: answered at once, no redeploy.
        site = sitegen.generate(Path(tempfile.mkdtemp()) / "site_data", 3)
        for artifact in plan(site.root, TEST_BASE_URL).artifacts:
            client.put_object(Bucket=BUCKET, Key=artifact.path.lstrip("/"), Body=artifact.body)
        assert lambda_handler.handler(tool_event("get_content_index", {}))["statusCode"] == 200


def test_the_handler_serves_the_bucket_and_follows_a_publish(
    s3: Any, files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_BUCKET", BUCKET)
    monkeypatch.setenv(lambda_handler.SECRET_ENV, SECRET)
    monkeypatch.setattr(lambda_handler, "_BUCKET", None)
    index = json.loads(files[paths.CONTENT_INDEX])
    faq = next(e["id"] for e in index["documents"] if e["content_type"] == "faq")
    first = handler_call("get_faq", {"faq_id": faq})
    assert first["content"][0]["text"].encode() == files[paths.faq(faq)]
    snapshot = lambda_handler.source()
    assert lambda_handler.source() is snapshot  # nothing published: the same catalog

    # A publish of one entry: the next call answers it, the catalog stays.
    s3.put_object(Bucket=BUCKET, Key=paths.faq(faq).lstrip("/"), Body=b'{"edited": 1}\n')
    assert handler_call("get_faq", {"faq_id": faq})["content"][0]["text"] == '{"edited": 1}\n'
    assert lambda_handler.source() is snapshot

    # A publish that adds an entry (a new index): a new catalog knows the new id.
    new_id = faq + "-added"
    added = dict(next(e for e in index["documents"] if e["id"] == faq), id=new_id)
    added["api_url"] = added["api_url"].replace(faq, new_id)
    index["documents"].append(added)
    s3.put_object(Bucket=BUCKET, Key=paths.CONTENT_INDEX.lstrip("/"), Body=json.dumps(index))
    s3.put_object(Bucket=BUCKET, Key=paths.faq(new_id).lstrip("/"), Body=b'{"new": 1}\n')
    manifest = json.loads(files[paths.MCP_MANIFEST])  # a small site's enum names it too
    tool = next(t for t in manifest["tools"] if t["name"] == "get_faq")
    tool["inputSchema"]["properties"]["faq_id"]["enum"].append(new_id)
    s3.put_object(Bucket=BUCKET, Key=paths.MCP_MANIFEST.lstrip("/"), Body=json.dumps(manifest))
    assert lambda_handler.source() is not snapshot
    assert handler_call("get_faq", {"faq_id": new_id})["content"][0]["text"] == '{"new": 1}\n'
