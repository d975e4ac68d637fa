"""The SiteContent provider on moto: the provider object taken from the mocked program's
inputs (serialized with dill, as the engine receives it) publishes to a moto bucket.

Every S3 and CloudFront call is recorded through botocore's event hooks, so the tests
count real PUTs, DELETEs and invalidations, not what the provider says it did.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from agent_contract import links
from agent_contract import manifest as build_manifest
from content_builder.build import build
from content_builder.writer import manifest
from infra import publisher
from infra.config import SiteConfig
from infra.site_content import decode_etags, decode_input, encode_input, input_entries
from tests.conftest import SPEC_SITE as SITE_DATA  # pins the spec's files and brand
from tests.pulumi_harness import (
    DISTRIBUTION_DOMAIN,
    props_of,
    provider_of,
    run_program,
    site_content,
)

BASE_URL = f"https://{DISTRIBUTION_DOMAIN}"
REGION = "eu-west-1"


@dataclass
class Recorder:
    calls: list[tuple[str, str]] = field(default_factory=list)  # (operation, key or paths)
    fail_put: set[str] = field(default_factory=set)
    #: Every S3 request by operation name (ListObjectsV2 pages, HeadObject, ...): what a
    #: drift check costs, counted on the wire rather than taken from the provider's word.
    requests: Counter[str] = field(default_factory=Counter)

    def hook(self, s3: Any, cloudfront: Any) -> None:
        s3.meta.events.register("before-call.s3", self._request)
        s3.meta.events.register("before-parameter-build.s3.PutObject", self._put)
        s3.meta.events.register("before-parameter-build.s3.DeleteObjects", self._delete)
        cloudfront.meta.events.register(
            "before-parameter-build.cloudfront.CreateInvalidation", self._invalidate
        )

    def _request(self, model: Any, **_: Any) -> None:
        self.requests[model.name] += 1

    def _put(self, params: dict[str, Any], **_: Any) -> None:
        key = params["Key"]
        if key in self.fail_put:
            raise RuntimeError(f"injected failure: PUT {key}")
        self.calls.append(("put", key))

    def _delete(self, params: dict[str, Any], **_: Any) -> None:
        for item in params["Delete"]["Objects"]:
            self.calls.append(("delete", item["Key"]))

    def _invalidate(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append(("invalidate", json.dumps(params["InvalidationBatch"]["Paths"]["Items"])))

    def of(self, operation: str) -> list[str]:
        return [subject for op, subject in self.calls if op == operation]

    @property
    def invalidated(self) -> list[list[str]]:
        return [json.loads(paths) for paths in self.of("invalidate")]

    def reset(self) -> None:
        self.calls.clear()
        self.requests.clear()


@dataclass
class World:
    provider: Any
    props: dict[str, Any]
    recorder: Recorder
    s3: Any
    bucket: str
    site: Path
    tmp: Path

    def rebuild(self, site: Path | None = None) -> dict[str, Any]:
        """Build `site` into a fresh folder and return new props pointing at it."""
        out = self.tmp / f"dist-{len(list(self.tmp.glob('dist-*')))}"
        result, _ = build(site or self.site, out, BASE_URL)
        files = manifest(result.artifacts, BASE_URL)["files"]
        return {**self.props, "files": encode_input(files), "source_dir": str(out)}

    def body(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def object_keys(self) -> set[str]:
        listing = self.s3.list_objects_v2(Bucket=self.bucket)
        return {item["Key"] for item in listing.get("Contents", [])}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    site = tmp_path / "site_data"
    shutil.copytree(SITE_DATA, site)
    run = run_program(
        SiteConfig(region=REGION, site_dir=site, dist_dir=tmp_path / "dist", tags={"t": "1"})
    )
    resource = site_content(run)
    provider = provider_of(resource)
    props = props_of(resource)

    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(
            Bucket=props["bucket"], CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        cloudfront = boto3.client("cloudfront", region_name="us-east-1")
        distribution = cloudfront.create_distribution(DistributionConfig=_distribution_config())
        props["distribution_id"] = distribution["Distribution"]["Id"]

        recorder = Recorder()
        real_clients = publisher.clients

        def recorded_clients(region: str | None) -> publisher.Clients:
            made = real_clients(region)
            recorder.hook(made.s3, made.cloudfront)
            return made

        monkeypatch.setattr(publisher, "clients", recorded_clients)
        yield World(provider, props, recorder, s3, props["bucket"], site, tmp_path)


def _distribution_config() -> dict[str, Any]:
    origin = {
        "Id": "o",
        "DomainName": "b.s3.amazonaws.com",
        "S3OriginConfig": {"OriginAccessIdentity": ""},
    }
    return {
        "CallerReference": "test",
        "Comment": "",
        "Enabled": True,
        "Origins": {"Quantity": 1, "Items": [origin]},
        "DefaultCacheBehavior": {
            "TargetOriginId": "o",
            "ViewerProtocolPolicy": "https-only",
            "MinTTL": 0,
            "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}},
        },
    }


def create(world: World) -> dict[str, Any]:
    result = world.provider.create(world.props)
    return {**result.outs, "__id": result.id}


def update(world: World, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    result = world.provider.update(olds["__id"], olds, news)
    return {**result.outs, "__id": olds["__id"]}


def edit_faq(site: Path, faq_id: str, extra: str) -> None:
    path = site / "faq" / f"{faq_id}.yaml"
    data = yaml.safe_load(path.read_text())
    data["answer"] = data["answer"].rstrip() + "\n\n" + extra
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# --- create ------------------------------------------------------------------------------


def test_create_uploads_every_file_with_its_headers(world: World) -> None:
    outs = create(world)
    files = decode_input(world.props["files"])
    assert world.object_keys() == {path.lstrip("/") for path in files}
    source = Path(world.props["source_dir"])
    for path, entry in files.items():
        key = path.lstrip("/")
        head = world.s3.head_object(Bucket=world.bucket, Key=key)
        assert world.body(key) == (source / key).read_bytes(), path
        assert head["ContentType"] == entry["media_type"], path
        assert head["CacheControl"] == entry["cache_control"], path
        assert head["Metadata"]["sha256"] == entry["sha256"], path
    assert sorted(world.recorder.of("put")) == sorted(p.lstrip("/") for p in files)
    assert outs["files"] == world.props["files"] and outs["generation"] == 1


def test_create_uploads_leaves_first_and_entry_points_last(world: World) -> None:
    create(world)
    order = world.recorder.of("put")
    position = {key: index for index, key in enumerate(order)}
    last_leaf = max(
        position[k] for k in order if k.startswith("api/v1/faq/") and k.endswith(".json")
    )
    # A Markdown mirror links its JSON twin: after every leaf (issue 14).
    assert min(position[k] for k in order if k.endswith(".md")) > last_leaf
    assert position["api/v1/content/index.json"] > last_leaf
    for entry_point in (".well-known/service.json", "llms.txt", "api/v1/mcp.json"):
        assert position[entry_point] > position["api/v1/content/index.json"]
        assert position[entry_point] > position["api/v1/content/search-index.json"]


# --- no change ---------------------------------------------------------------------------


def test_nothing_changed_means_no_diff_no_put_no_invalidation(world: World) -> None:
    olds = create(world)
    world.recorder.reset()
    news = world.rebuild()  # a fresh build of the same content, in another folder
    diff = world.provider.diff(olds["__id"], olds, news)
    assert diff.changes is False and not diff.replaces
    update(world, olds, news)
    assert world.recorder.calls == []


# --- one FAQ edited --------------------------------------------------------------------

#: The sharded search index's content-named shards and its term map (issue 25).
SHARDS = "api/v1/search/shards/"
TERM_MAP = "api/v1/search/terms.json"


def test_one_edited_faq_uploads_it_and_its_aggregates_and_invalidates_exactly_those(
    world: World,
) -> None:
    olds = create(world)
    edit_faq(world.site, "q03-protection", "Every deploy is logged in the stack history.")
    assert build(world.site, world.tmp / "lock-refresh", BASE_URL)  # refresh the lock
    news = world.rebuild()
    world.recorder.reset()
    assert world.provider.diff(olds["__id"], olds, news).changes is True
    outs = update(world, olds, news)

    expected = {
        "api/v1/faq/q03-protection.json",
        "api/v1/faq/q03-protection.md",  # its Markdown mirror
        "api/v1/content/index.json",
        "api/v1/content/search-index.json",
        "api/v1/changes.json",  # a new generation
        "sitemap.xml",  # a new lastmod
        "llms-full.txt",
        "llms.txt",  # the entry's sizes (issue 26)
        "llms/faq-1.txt",
    }
    put = set(world.recorder.of("put"))
    # The sharded search index (issue 25): its term map and the shards holding the new
    # words, each a new name; the shards they replace are deleted. Shards are named by
    # their bytes (cached immutably): neither the new nor the old names are invalidated.
    shards = {key for key in put if key.startswith(SHARDS)}
    assert put - shards == expected | {TERM_MAP}
    assert 0 < len(shards) <= 8
    deleted = world.recorder.of("delete")
    assert deleted and all(key.startswith(SHARDS) for key in deleted)
    assert not set(deleted) & put
    # llms.txt is also `/` (the root object), invalidated with it.
    invalidated = sorted(["/", *("/" + key for key in expected | {TERM_MAP})])
    assert world.recorder.invalidated == [invalidated]
    assert outs["last_publish"]["invalidated"] == invalidated
    assert "stack history" in json.loads(world.body("api/v1/faq/q03-protection.json"))["answer"]
    assert outs["generation"] == 2


def test_a_cache_control_change_alone_reuploads(world: World) -> None:
    olds = create(world)
    files = decode_input(world.props["files"])
    files["/errors/404.json"]["cache_control"] = "public, max-age=30, s-maxage=30"
    news = {**world.props, "files": encode_input(files)}
    world.recorder.reset()
    assert world.provider.diff(olds["__id"], olds, news).changes is True
    update(world, olds, news)
    assert world.recorder.of("put") == ["errors/404.json"]
    head = world.s3.head_object(Bucket=world.bucket, Key="errors/404.json")
    assert head["CacheControl"] == "public, max-age=30, s-maxage=30"
    assert world.recorder.invalidated == [["/errors/404.json"]]


# --- removal ---------------------------------------------------------------------------------


def test_a_removed_file_is_deleted_after_the_uploads_and_invalidated(world: World) -> None:
    olds = create(world)
    edit_faq(world.site, "q01-difference", "Nothing to install on the website itself.")
    build(world.site, world.tmp / "lock-refresh", BASE_URL)
    news = world.rebuild()
    files = decode_input(news["files"])
    del files["/api/v1/on-site-agent.json"]
    news["files"] = encode_input(files)
    world.recorder.reset()
    update(world, olds, news)

    kinds = [operation for operation, _ in world.recorder.calls]
    assert kinds.index("delete") > max(i for i, kind in enumerate(kinds) if kind == "put")
    deleted = world.recorder.of("delete")  # and the search shards the edit replaced
    assert [key for key in deleted if not key.startswith(SHARDS)] == ["api/v1/on-site-agent.json"]
    assert "api/v1/on-site-agent.json" not in world.object_keys()
    (paths,) = world.recorder.invalidated
    assert "/api/v1/on-site-agent.json" in paths and "/api/v1/faq/q01-difference.json" in paths
    assert kinds[-1] == "invalidate"


# --- failure in the middle --------------------------------------------------------------


def _internal_links(body: bytes) -> set[str]:
    """The S3 keys a published file links to."""
    found = links.api_paths(body.decode("utf-8"), BASE_URL) - links.NON_FILE_PATHS
    return {path.lstrip("/") for path in found if "{" not in path}


def test_a_failed_put_surfaces_and_leaves_every_published_link_resolving(world: World) -> None:
    olds = create(world)
    new_faq = world.site / "faq" / "q07-pricing.yaml"
    new_faq.write_text(
        yaml.safe_dump(
            {"id": "q07-pricing", "question": "What does it cost to run?",
             "answer": "Storage and CDN traffic only.\n\nThere is no server to pay for."}
        )
    )  # fmt: skip
    build(world.site, world.tmp / "lock-refresh", BASE_URL)
    news = world.rebuild()
    assert "/api/v1/faq/q07-pricing.json" in decode_input(news["files"])
    world.recorder.fail_put.add("api/v1/faq/q07-pricing.json")
    world.recorder.reset()

    with pytest.raises(publisher.PublishError, match=r"q07-pricing\.json"):
        update(world, olds, news)

    puts = world.recorder.of("put")
    assert "api/v1/content/index.json" not in puts, "no aggregate after a failed leaf"
    assert world.recorder.of("delete") == [] and world.recorder.invalidated == []
    keys = world.object_keys()
    assert "api/v1/faq/q07-pricing.json" not in keys
    for key in keys:
        missing = _internal_links(world.body(key)) - keys
        assert not missing, (key, missing)
    index = json.loads(world.body("api/v1/content/index.json"))
    assert "q07-pricing" not in {entry["id"] for entry in index["documents"]}

    world.recorder.fail_put.clear()
    update(world, olds, news)  # the engine retries from the old state: now it all lands
    assert "q07-pricing" in world.body("api/v1/content/index.json").decode()


# --- drift, delete ------------------------------------------------------------------------


def test_read_reports_an_object_altered_out_of_band(world: World) -> None:
    outs = create(world)
    world.s3.put_object(
        Bucket=world.bucket,
        Key="api/v1/faq/q02-endpoints.json",
        Body=b"{}",
        ContentType="text/html",
    )
    world.s3.delete_object(Bucket=world.bucket, Key="api/v1/faq/q05-insights.json")
    read = world.provider.read(outs["__id"], outs)
    assert isinstance(read.outs["files"], str)  # the current form, whatever it read
    files = decode_input(read.outs["files"])
    original = decode_input(outs["files"])["/api/v1/faq/q02-endpoints.json"]
    # Seen in the listing (other size): what it holds is not what was published. (Its
    # Content-Type is not in a listing: a header-only change is for verify to find,
    # docs/decisions.md, "Issue 24: drift repaired on every deploy".)
    assert files["/api/v1/faq/q02-endpoints.json"]["sha256"] != original["sha256"]
    assert files["/api/v1/faq/q02-endpoints.json"]["size"] == 2
    assert "/api/v1/faq/q05-insights.json" not in files
    untouched = "/api/v1/faq/q01-difference.json"
    assert files[untouched] == decode_input(outs["files"])[untouched]

    refreshed = {**read.outs, "__id": outs["__id"]}
    assert world.provider.diff(outs["__id"], refreshed, world.props).changes is True
    world.recorder.reset()
    update(world, refreshed, world.props)
    assert sorted(world.recorder.of("put")) == [
        "api/v1/faq/q02-endpoints.json", "api/v1/faq/q05-insights.json",
    ]  # fmt: skip
    assert json.loads(world.body("api/v1/faq/q02-endpoints.json"))["id"] == "q02-endpoints"


# --- drift repaired on every deploy (issue 24) ---------------------------------------------

#: A FAQ entry other published files link to (the index, the search index, llms.txt ...).
LINKED = "api/v1/faq/q05-insights.json"


def _linking_to(world: World, key: str) -> list[str]:
    return sorted(k for k in world.object_keys() if key in _internal_links(world.body(k)))


def _assert_published_as_built(world: World, props: dict[str, Any], key: str) -> None:
    """The object holds the built file's bytes, its Content-Type, Cache-Control and sha256."""
    entry = decode_input(props["files"])["/" + key]
    head = world.s3.head_object(Bucket=world.bucket, Key=key)
    assert world.body(key) == (Path(props["source_dir"]) / key).read_bytes(), key
    assert head["ContentType"] == entry["media_type"], key
    assert head["CacheControl"] == entry["cache_control"], key
    assert head["Metadata"]["sha256"] == entry["sha256"], key


def test_up_refresh_on_an_unchanged_manifest_puts_a_deleted_object_back(world: World) -> None:
    """`pulumi up --refresh` (deploy.yml) as the engine runs it on this resource: read
    (refresh), then diff against the program's unchanged inputs, then update. The read
    must show the deleted file missing, or the engine never calls update."""
    outs = create(world)
    world.s3.delete_object(Bucket=world.bucket, Key=LINKED)
    assert _linking_to(world, LINKED), "published files now link to nothing"
    world.recorder.reset()

    read = world.provider.read(outs["__id"], outs)
    assert world.recorder.requests["ListObjectsV2"] == 1, "one listing, not a HEAD per file"
    assert world.recorder.requests["HeadObject"] == 0 and world.recorder.requests["GetObject"] == 0
    assert read.id == outs["__id"]
    refreshed = {**read.outs, "__id": outs["__id"]}
    assert "/" + LINKED not in decode_input(refreshed["files"])

    diff = world.provider.diff(outs["__id"], refreshed, world.props)  # the same manifest
    assert diff.changes is True and not diff.replaces
    world.recorder.reset()
    updated = update(world, refreshed, world.props)

    assert world.recorder.of("put") == [LINKED], "the missing file alone"
    _assert_published_as_built(world, world.props, LINKED)
    assert world.recorder.invalidated == [["/" + LINKED]]
    assert (
        world.recorder.requests["ListObjectsV2"] == 1 and world.recorder.requests["HeadObject"] == 0
    )
    assert updated["files"] == world.props["files"]
    keys = world.object_keys()
    for key in keys:
        assert not _internal_links(world.body(key)) - keys, key

    # The next deploy finds nothing to repair, nothing to publish.
    again = world.provider.read(outs["__id"], updated)
    assert again.outs["files"] == world.props["files"]
    assert world.provider.diff(outs["__id"], {**again.outs}, world.props).changes is False


def _overwrite_keeping_size_and_headers(world: World, props: dict[str, Any], key: str) -> None:
    """Other bytes of the same size under the key, with our headers and sha256 metadata
    copied on: only the ETag (the MD5 of the bytes) tells."""
    body = (Path(props["source_dir"]) / key).read_bytes()
    entry = decode_input(props["files"])["/" + key]
    world.s3.put_object(
        Bucket=world.bucket, Key=key, Body=body.replace(b"agent", b"AGENT", 1),
        ContentType=entry["media_type"], CacheControl=entry["cache_control"],
        Metadata={"sha256": entry["sha256"]},
    )  # fmt: skip
    assert len(world.body(key)) == len(body) and world.body(key) != body


def test_up_refresh_puts_back_bytes_changed_in_place_at_the_same_size(world: World) -> None:
    """The ETag each object had when published is in the resource's state: refresh
    compares the listing's ETags with it, so an edit that keeps the size is seen too."""
    outs = create(world)
    key = "api/v1/faq/q01-difference.json"
    _overwrite_keeping_size_and_headers(world, world.props, key)
    world.recorder.reset()
    read = world.provider.read(outs["__id"], outs)
    assert world.recorder.requests == Counter({"ListObjectsV2": 1})
    observed = decode_input(read.outs["files"])["/" + key]
    assert observed["sha256"] == publisher.UNKNOWN_SHA256
    refreshed = {**read.outs, "__id": outs["__id"]}
    assert world.provider.diff(outs["__id"], refreshed, world.props).changes is True
    world.recorder.reset()
    updated = update(world, refreshed, world.props)
    assert world.recorder.of("put") == [key]
    _assert_published_as_built(world, world.props, key)
    again = world.provider.read(outs["__id"], updated)
    assert world.provider.diff(outs["__id"], again.outs, world.props).changes is False


def test_state_without_recorded_etags_is_read_by_size(world: World) -> None:
    """A stack published before issue 24 has no ETags in its state: refresh still finds
    missing and resized objects; the next publish compares ETags with the build."""
    outs = create(world)
    legacy = {name: value for name, value in outs.items() if name != "etags"}
    world.s3.delete_object(Bucket=world.bucket, Key=LINKED)
    read = world.provider.read(outs["__id"], legacy)
    files = decode_input(read.outs["files"])
    assert "/" + LINKED not in files
    assert len(files) == len(decode_input(outs["files"])) - 1
    # An ETag nobody compared with the build is not written down as the published one.
    assert decode_etags(read.outs["etags"], files) == {}
    assert decode_etags(outs["etags"], decode_input(outs["files"]))  # a publish records them


def test_a_publish_repairs_what_went_missing_or_changed_behind_its_back(world: World) -> None:
    """No refresh: the engine hands update the state it believes. The publish still puts
    back a deleted object, one of another size, and one of the same size whose bytes
    differ (only its ETag tells), with one listing and no HEAD."""
    olds = create(world)
    resized, same_size = "api/v1/faq/q02-endpoints.json", "api/v1/faq/q01-difference.json"
    world.s3.delete_object(Bucket=world.bucket, Key=LINKED)
    world.s3.put_object(Bucket=world.bucket, Key=resized, Body=b"{}")
    _overwrite_keeping_size_and_headers(world, world.props, same_size)

    edit_faq(world.site, "q03-protection", "Every deploy is logged in the stack history.")
    build(world.site, world.tmp / "lock-refresh", BASE_URL)
    news = world.rebuild()
    world.recorder.reset()
    outs = update(world, olds, news)

    repaired = sorted([LINKED, resized, same_size])
    changed = {
        "api/v1/faq/q03-protection.json", "api/v1/faq/q03-protection.md",
        "api/v1/content/index.json", "api/v1/content/search-index.json",
        "api/v1/changes.json", "sitemap.xml", "llms-full.txt", "llms.txt", "llms/faq-1.txt",
    }  # fmt: skip
    changed.add(TERM_MAP)
    put = world.recorder.of("put")
    assert sorted(key for key in put if not key.startswith(SHARDS)) == sorted(
        changed | set(repaired)
    )
    for key in repaired:
        _assert_published_as_built(world, news, key)
    assert outs["last_publish"]["repaired"] == ["/" + key for key in repaired]
    assert world.recorder.invalidated == [
        sorted(["/", *("/" + key for key in changed | set(repaired))])  # llms.txt is `/` too
    ]
    assert world.recorder.requests["ListObjectsV2"] == 1
    assert world.recorder.requests["HeadObject"] == 0 and world.recorder.requests["GetObject"] == 0
    # Leaves still go first: the repaired FAQ entries before the index that lists them.
    order = world.recorder.of("put")
    assert max(order.index(key) for key in repaired) < order.index("api/v1/content/index.json")


def test_a_publish_with_nothing_drifted_lists_once_and_writes_nothing(world: World) -> None:
    olds = create(world)
    news = {**world.props, "distribution_id": world.props["distribution_id"]}
    world.recorder.reset()
    outs = update(world, olds, news)
    assert world.recorder.calls == [] and outs["last_publish"]["repaired"] == []
    assert world.recorder.requests == Counter({"ListObjectsV2": 1})


def test_the_listing_follows_every_page(world: World) -> None:
    """ListObjectsV2 answers at most 1,000 keys a page: the inventory must follow the
    continuation token to the last page (here pages of 3, so 15 objects take 5 requests)."""
    for index in range(15):
        world.s3.put_object(Bucket=world.bucket, Key=f"k/{index:02}", Body=b"x" * index)
    site = publisher.Publisher(
        clients=publisher.clients(REGION), bucket=world.bucket,
        distribution_id=None, source_dir=world.tmp, list_page_size=3,
    )  # fmt: skip
    stored = site.inventory()
    assert sorted(stored) == [f"k/{index:02}" for index in range(15)]
    assert stored["k/07"].size == 7
    assert stored["k/07"].etag == hashlib.md5(b"x" * 7).hexdigest()  # no quotes
    assert world.recorder.requests["ListObjectsV2"] == 5


def test_delete_removes_what_it_published(world: World) -> None:
    outs = create(world)
    world.s3.put_object(Bucket=world.bucket, Key="not-ours.txt", Body=b"keep")
    world.recorder.reset()
    world.provider.delete(outs["__id"], outs)
    assert world.object_keys() == {"not-ours.txt"}
    assert world.recorder.invalidated == [["/*"]]


def test_moving_to_another_bucket_is_a_replacement(world: World) -> None:
    outs = create(world)
    moved = {**world.props, "bucket": "another-bucket"}
    diff = world.provider.diff(outs["__id"], outs, moved)
    assert diff.changes is True and diff.replaces == ["bucket"]


# --- pure parts: invalidation paths, throttling --------------------------------------------


def test_invalidation_lists_exact_paths_and_the_root_with_llms_txt() -> None:
    assert publisher.invalidation_paths(["/api/v1/faq/a.json", "/api/v1/faq/a.json"]) == [
        "/api/v1/faq/a.json"
    ]
    # CloudFront caches the default root object under "/", not "/llms.txt".
    assert publisher.invalidation_paths(["/llms.txt"]) == ["/", "/llms.txt"]


def test_invalidation_collapses_to_folder_wildcards_then_everything() -> None:
    many = [f"/api/v1/faq/q{i:03}.json" for i in range(150)] + ["/api/v1/content/index.json"]
    assert publisher.invalidation_paths(many) == ["/api/v1/content/*", "/api/v1/faq/*"]
    scattered = [f"/f{i}/x{j}.json" for i in range(20) for j in range(6)]
    assert publisher.invalidation_paths(scattered) == ["/*"], "past 15 wildcards: one /*"
    # A changed root-level file needs the root folder's wildcard, which is everything.
    assert publisher.invalidation_paths(["/llms.txt", *many]) == ["/*"]


class _ThrottledCloudFront:
    def __init__(self, failures: int, code: str = "TooManyInvalidationsInProgress") -> None:
        self.failures, self.code, self.calls = failures, code, 0

    def create_invalidation(self, **_: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        self.calls += 1
        if self.calls <= self.failures:
            raise ClientError({"Error": {"Code": self.code, "Message": "slow down"}}, "Create")
        return {"Invalidation": {"Id": "I123"}}


def _throttled_publisher(cloudfront: Any, sleeps: list[float]) -> publisher.Publisher:
    return publisher.Publisher(
        clients=publisher.Clients(s3=None, cloudfront=cloudfront),
        bucket="b",
        distribution_id="D",
        source_dir=Path("."),
        sleep=sleeps.append,
    )


def test_throttled_invalidations_are_retried_with_backoff() -> None:
    sleeps: list[float] = []
    cloudfront = _ThrottledCloudFront(failures=3)
    site = _throttled_publisher(cloudfront, sleeps)
    assert site.invalidate(["/llms.txt"], "ref") == "I123"
    assert cloudfront.calls == 4
    assert sleeps == [1.0, 2.0, 4.0]


def test_invalidation_retries_outlast_cloudfronts_in_progress_limit() -> None:
    """In-progress slots free up only as earlier invalidations complete; AWS's own waiter
    allows those 10 minutes. The publisher keeps trying for longer, then stops clearly."""
    sleeps: list[float] = []
    site = _throttled_publisher(_ThrottledCloudFront(failures=10_000), sleeps)
    with pytest.raises(publisher.PublishError, match="TooManyInvalidationsInProgress"):
        site.invalidate(["/x"], "ref")
    assert sum(sleeps) > 600, "gives up only after AWS's waiter would have"
    assert sum(sleeps) <= site.invalidation_budget
    assert max(sleeps) <= 60, "polls at least once a minute once backed off"
    recovered = _ThrottledCloudFront(failures=12)  # 12 minutes of refusals
    assert _throttled_publisher(recovered, []).invalidate(["/x"], "ref") == "I123"


def test_other_invalidation_errors_are_never_retried() -> None:
    denied = _ThrottledCloudFront(failures=1, code="AccessDenied")
    with pytest.raises(publisher.PublishError, match="AccessDenied"):
        _throttled_publisher(denied, []).invalidate(["/x"], "ref")
    assert denied.calls == 1


def test_caller_reference_differs_per_publish_and_repeats_for_a_retry() -> None:
    first = publisher.caller_reference("site", 2, ["/a"])
    assert first == publisher.caller_reference("site", 2, ["/a"])
    assert first != publisher.caller_reference("site", 3, ["/a"])


def test_read_reports_the_content_gone_when_its_bucket_is(world: World) -> None:
    outs = create(world)
    paginator = world.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=world.bucket):
        for item in page.get("Contents", []):
            world.s3.delete_object(Bucket=world.bucket, Key=item["Key"])
    world.s3.delete_bucket(Bucket=world.bucket)
    assert world.provider.read(outs["__id"], outs).id == ""


def test_file_entries_survive_the_string_encoding() -> None:
    entry = {
        "sha256": "ab" * 32,
        "size": 1234,
        "media_type": "text/plain; charset=utf-8",
        "cache_control": "public, max-age=300, s-maxage=86400",
    }
    text = build_manifest.encode_entry(entry)
    assert text == "ab" * 32 + " 1234 text/plain; charset=utf-8|public, max-age=300, s-maxage=86400"
    assert build_manifest.decode_entry(text) == entry
    assert build_manifest.decode_files(build_manifest.encode_files({"/x": entry})) == {"/x": entry}


# --- state written by the previous version ----------------------------------------------

#: SiteContent's inputs as the previous version registered them (and every stack's state
#: holds them): `files` a map of one `encode_entry` string per file. Captured from that
#: version's program under mocks; frozen, not regenerated.
STATE_V1 = Path(__file__).parent / "fixtures" / "site_content_state_v1.json"


def _as_previous_version(props: dict[str, Any]) -> dict[str, Any]:
    """`props` with `files` in the previous version's form (a map of strings)."""
    return {**props, "files": build_manifest.encode_files(decode_input(props["files"]))}


def test_state_of_the_previous_version_reads_as_the_same_files() -> None:
    from infra.site_content import SiteContentProvider, input_digest

    state = json.loads(STATE_V1.read_text())
    legacy = state["files"]
    assert isinstance(legacy, dict) and legacy  # the fixture is what it claims to be
    files = decode_input(legacy)
    assert set(files) == set(legacy)
    assert all(len(entry["sha256"]) == 64 and entry["size"] > 0 for entry in files.values())
    current = encode_input(files)
    assert isinstance(current, str) and decode_input(current) == files
    # The stack outputs keep their values across the change of form: the same count,
    # the same digest as the previous version exported (files_digest of the map).
    assert len(input_entries(current)) == len(legacy)
    assert input_digest(current) == input_digest(legacy) == build_manifest.files_digest(legacy)
    # The one before that stored manifest entries as maps: still readable.
    assert decode_input({path: dict(entry) for path, entry in files.items()}) == files

    provider = SiteContentProvider()
    olds = {**state, "source_dir": "dist", "generation": 3, "last_publish": None}
    same = provider.diff("id", olds, {**olds, "files": current})
    assert same.changes is False and same.replaces == []
    path = "/api/v1/faq/q02-endpoints.json"
    edited = {**files, path: {**files[path], "sha256": "0" * 64}}
    assert provider.diff("id", olds, {**olds, "files": encode_input(edited)}).changes is True
    with pytest.raises(TypeError, match="SiteContent files"):
        decode_input(["not", "a", "map"])


def test_an_unchanged_files_input_is_compared_not_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pulumi preview` on unchanged content: the same string means the same files, so
    the provider's diff answers without decoding 9 MB twice (40,000 files); any other
    difference still counts, and a string that differs is still decoded and planned."""
    from infra import site_content
    from infra.site_content import SiteContentProvider

    entry = build_manifest.entry("ab" * 32, 7, "application/json", "public, max-age=60")
    files = {f"/api/v1/faq/q{i}.json": entry for i in range(3)}
    text = encode_input(files)
    olds = {"bucket": "b", "region": "eu-west-1", "distribution_id": "D",
            "source_dir": "dist", "files": text}  # fmt: skip
    same_text = {**olds, "files": (text + " ")[:-1]}  # equal, not the same object
    assert same_text["files"] is not text and same_text["files"] == text
    provider = SiteContentProvider()

    def no_decoding(_value: Any) -> dict[str, Any]:
        raise AssertionError("an unchanged input was decoded")

    with monkeypatch.context() as patched:
        patched.setattr(site_content, "input_entries", no_decoding)
        assert provider.diff("id", olds, same_text).changes is False
        assert provider.diff("id", olds, {**same_text, "distribution_id": "E"}).changes is True
        moved = provider.diff("id", olds, {**same_text, "bucket": "c"})
        assert moved.changes is True and moved.replaces == ["bucket"]
        with pytest.raises(AssertionError, match="decoded"):  # a different string is decoded
            provider.diff("id", olds, {**olds, "files": encode_input({})})
    # Decoded, as before: the same files in the previous version's form, and an edit.
    legacy = {**olds, "files": build_manifest.encode_files(files)}
    assert provider.diff("id", legacy, olds).changes is False
    edited = {**files, "/api/v1/faq/q1.json": {**entry, "sha256": "0" * 64}}
    assert provider.diff("id", olds, {**olds, "files": encode_input(edited)}).changes is True


def _variants(files: dict[str, Any]) -> dict[str, tuple[dict[str, Any], bool]]:
    """Edits of `files`, each with whether publishing it over `files` does anything."""
    first, last = sorted(files)[0], sorted(files)[-1]
    renamed = "/api/v1/faq/renamed.json"

    def edit(**changes: Any) -> dict[str, Any]:
        return {**files, first: {**files[first], **changes}}

    return {
        "nothing": (dict(files), False),
        "bytes": (edit(sha256="0" * 64), True),
        "size alone (not a publish change)": (edit(size=files[first]["size"] + 1), False),
        "media type": (edit(media_type="text/plain"), True),
        "cache-control": (edit(cache_control="no-store"), True),
        "a file added": ({**files, "/api/v1/faq/new.json": files[first]}, True),
        "a file removed": ({p: e for p, e in files.items() if p != last}, True),
        "a file renamed": ({(renamed if p == last else p): e for p, e in files.items()}, True),
        "everything removed": ({}, True),
    }


def test_the_diff_answers_exactly_what_the_publish_plan_would() -> None:
    """The provider's diff compares one-line entries instead of planning a publish: for
    every kind of edit, and every form a stack may hold, it must say what plan_publish
    says (and what a publish would do)."""
    from infra.site_content import _files_changed

    entry = build_manifest.entry("ab" * 32, 7, "application/json", "public, max-age=60")
    files = {f"/api/v1/faq/q{i}.json": {**entry, "size": i + 1} for i in range(4)}
    forms = {
        "string": encode_input,
        "map of strings (v1)": build_manifest.encode_files,
        "map of entries (v0)": lambda f: {p: dict(e) for p, e in f.items()},
    }
    for name, (edited, changes) in _variants(files).items():
        for old_form, old_encode in forms.items():
            for new_form, new_encode in forms.items():
                old, new = old_encode(files), new_encode(edited)
                planned = not publisher.plan_publish(decode_input(old), decode_input(new)).is_empty
                assert planned is changes, (name, "the expectation itself")
                assert _files_changed(old, new) is changes, (name, old_form, new_form)
    assert _files_changed(None, encode_input(files)) is True  # a first publish
    assert _files_changed("", "") is False and _files_changed(None, {}) is False


def test_an_update_from_previous_version_state_uploads_only_what_changed(world: World) -> None:
    outs = _as_previous_version(create(world))
    assert world.provider.diff(outs["__id"], outs, world.props).changes is False
    edit_faq(world.site, "q03-protection", "Every change is in the stack history.")
    build(world.site, world.tmp / "lock-refresh", BASE_URL)
    news = world.rebuild()
    before, after = decode_input(outs["files"]), decode_input(news["files"])
    changed = {p for p in after if build_manifest.entry_signature(after[p]) !=
               build_manifest.entry_signature(before.get(p, {}))}  # fmt: skip
    assert changed and len(changed) < len(after) / 2
    world.recorder.reset()
    updated = update(world, outs, news)
    assert sorted(world.recorder.of("put")) == sorted(p.lstrip("/") for p in changed)
    assert isinstance(updated["files"], str) and updated["generation"] == 2

    # refresh and destroy read the previous form too
    read = world.provider.read(outs["__id"], _as_previous_version(updated))
    assert decode_input(read.outs["files"]) == after
    world.provider.delete(outs["__id"], _as_previous_version(updated))
    assert world.object_keys() == set()
