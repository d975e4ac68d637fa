"""The MCP server on AWS: every property under Pulumi mocks, and the packaged Lambda
handler over real HTTP on 127.0.0.1 (a function-URL emulator in front of it).

Expected values are AWS's, written out here (managed policy ids, method sets), not read
back from infra/mcp_function.py.
"""

from __future__ import annotations

import json
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pytest
import yaml
from mcp import Client
from moto import mock_aws

from agent_contract import paths
from agent_mcp import lambda_handler
from benchmarks import sitegen
from content_builder.build import plan
from infra import aws_rules
from infra.aws_rules import unwrap_secrets
from infra.config import ConfigError, McpServerConfig, SiteConfig
from infra.mcp_function import PACKAGES
from tests.conftest import REPO
from tests.pulumi_harness import (
    DISTRIBUTION_DOMAIN,
    FUNCTION_URL,
    ProgramRun,
    run_program,
    site_content,
)
from tests.test_mcp_s3 import bucket_holding
from tests.test_mcp_server import run

DOMAIN = "agents.example.test"
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/abcd-1234"
SECRET = "k3Jx9-origin-secret-0123456789abcdef"
SEVEN_METHODS = {"GET", "HEAD", "OPTIONS", "PUT", "POST", "PATCH", "DELETE"}
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # AWS managed CachingDisabled
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"  # AllViewerExceptHostHeader


def config(root: Path, mcp: bool = True, **mcp_options: Any) -> SiteConfig:
    layer = root / "layer"
    (layer / "python").mkdir(parents=True, exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    options = {"origin_secret": SECRET, "reserved_concurrency": 5, "layer_dir": layer}
    options.update(mcp_options)
    return SiteConfig(
        region="eu-west-1",
        site_dir=root / "site_data",
        dist_dir=root / ("dist-on" if mcp else "dist-off"),
        domain=DOMAIN,
        certificate_arn=CERTIFICATE,
        mcp=McpServerConfig(**options) if mcp else None,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-infra")
    sitegen.generate(root / "site_data", 3)
    return root


@pytest.fixture(scope="module")
def on(root: Path) -> ProgramRun:
    return run_program(config(root))


@pytest.fixture(scope="module")
def off(root: Path) -> ProgramRun:
    return run_program(config(root, mcp=False))


def distribution(run: ProgramRun) -> dict[str, Any]:
    return run.mocks.one("aws:cloudfront/distribution:Distribution").inputs


def test_off_by_default_declares_nothing_and_files_stay_byte_identical(off, root) -> None:
    assert not [r for r in off.mocks.resources if r.typ.startswith("aws:lambda")]
    origins = unwrap_secrets(distribution(off)["origins"])
    assert [o["originId"] for o in origins] == ["content-bucket"]
    behaviours = distribution(off)["orderedCacheBehaviors"]
    assert all(b["pathPattern"] != "/mcp" for b in behaviours)
    expected = {a.key: a.body for a in plan(root / "site_data", f"https://{DOMAIN}").artifacts}
    written = {
        str(p.relative_to(root / "dist-off")): p.read_bytes()
        for p in (root / "dist-off").rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }
    assert {k: v for k, v in written.items() if k in expected} == expected
    discovery = json.loads(expected["api/v1/mcp.json"])  # unchanged manifest
    assert discovery["mcpVersion"] == "2024-11-05"


def discovery_key(root: Path) -> str:
    """The discovery document's key for the generated site's brand (sitegen copies the
    owner's site.yaml, so the brand is the owner's, not the spec's `service`)."""
    brand = yaml.safe_load((root / "site_data" / "site.yaml").read_text())["brand"]
    return paths.discovery(brand).lstrip("/")


def test_on_only_the_discovery_document_changes_and_names_the_endpoint(on, off, root) -> None:
    discovery = discovery_key(root)

    def files(folder: str) -> dict[str, bytes]:
        base = root / folder
        return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*.json")}

    with_mcp, without = files("dist-on"), files("dist-off")
    # manifest.json is the writer's record of the output (hashes), not a published file
    changed = sorted(k for k in with_mcp if with_mcp[k] != without.get(k) and k != "manifest.json")
    # And the Agent Skill, which names the live server (issue 26): its index's digest (the
    # v0.1.0 index names no digest, so it does not change); and the MCP manifest, at both
    # its locations, which says where the server answers instead of "planned".
    manifests = [paths.MCP_MANIFEST.lstrip("/"), paths.MCP_WELL_KNOWN.lstrip("/")]
    assert changed == sorted([discovery, ".well-known/agent-skills/index.json", *manifests])
    for manifest in manifests:
        description = json.loads(with_mcp[manifest])["serverInfo"]["description"]
        assert f"answers at https://{DOMAIN}/mcp" in description, description
        assert "planned" in json.loads(without[manifest])["serverInfo"]["description"]
    brand = discovery.removeprefix(".well-known/").removesuffix(".json")
    for folder in ("agent-skills", "skills"):
        skill = root / "dist-on" / ".well-known" / folder / brand / "SKILL.md"
        assert f"https://{DOMAIN}/mcp" in skill.read_text()
    mcp = json.loads(with_mcp[discovery])["protocols"]["mcp"]
    assert mcp["endpoint"] == f"https://{DOMAIN}/mcp"
    assert mcp["json_rpc_server"] == "available"
    planned = json.loads(without[discovery])["protocols"]["mcp"]
    assert "endpoint" not in planned and planned["json_rpc_server"] == "planned"


def test_function_runtime_throttle_and_secret(on) -> None:
    function = on.mocks.one("aws:lambda/function:Function").inputs
    assert function["runtime"].startswith("python3.")
    assert function["handler"] == "agent_mcp.lambda_handler.handler"
    assert function["reservedConcurrentExecutions"] == 5
    assert unwrap_secrets(function["environment"])["variables"]["MCP_ORIGIN_SECRET"] == SECRET
    # the secret is marked secret in state, not stored in plain text
    assert aws_rules.SECRET_SIG_KEY in function["environment"]
    layer = on.mocks.one("aws:lambda/layerVersion:LayerVersion").inputs
    assert function["runtime"] in layer["compatibleRuntimes"]


def test_package_holds_the_handler_and_no_content(on, root) -> None:
    """The function packages code only: its archive names no published file, so a
    publish cannot change it (the next test edits the content and compares)."""
    code = on.mocks.one("aws:lambda/function:Function").inputs["code"]
    assert isinstance(code, pulumi.AssetArchive)
    assets = code.assets
    for module in ("agent_mcp/lambda_handler.py", "agent_mcp/http.py", "agent_mcp/s3.py"):
        assert module in assets
    assert not [k for k in assets if "__pycache__" in k or k.endswith(".pyc")]
    assert all(k.endswith(".py") and k.split("/")[0] in PACKAGES for k in assets)


def function_inputs(run: ProgramRun) -> dict[str, Any]:
    inputs = dict(run.mocks.one("aws:lambda/function:Function").inputs)
    inputs["code"] = sorted(inputs["code"].assets)
    return unwrap_secrets(inputs)


def test_a_content_change_leaves_the_function_as_it_was(on, root, tmp_path) -> None:
    """A publish does not redeploy the function: with one document edited, every input
    of the function (its code, environment, limits) and its role's policy are what they
    were, while the published files changed."""
    edited = tmp_path / "edited"
    shutil.copytree(root / "site_data", edited / "site_data")
    document = next(
        path.stem
        for path in sorted((edited / "site_data" / "content").glob("*.yaml"))
        if path.stem != "site" and "      body: >-\n" in path.read_text("utf-8")
    )
    sitegen.edit_document(edited / "site_data", document, "Quokkas publish this edit.")
    sitegen.refresh_lock(edited / "site_data")
    again = run_program(config(edited))
    assert function_inputs(again) == function_inputs(on)
    policy = "aws:iam/rolePolicy:RolePolicy"
    assert again.mocks.one(policy).inputs == on.mocks.one(policy).inputs
    assert site_content(again).inputs["files"] != site_content(on).inputs["files"]


def test_the_function_reads_its_bucket_with_read_only_permissions(on) -> None:
    bucket = on.mocks.one("aws:s3/bucket:Bucket")
    name, arn = f"{bucket.name}-0a1b2c3", f"arn:aws:s3:::{bucket.name}-0a1b2c3"
    function = on.mocks.one("aws:lambda/function:Function").inputs
    assert unwrap_secrets(function["environment"])["variables"]["MCP_BUCKET"] == name
    policy = json.loads(on.mocks.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    granted = {
        (action, statement["Resource"])
        for statement in policy["Statement"]
        for action in ([statement["Action"]] if isinstance(statement["Action"], str)
                       else statement["Action"])
    }  # fmt: skip
    assert granted == {("s3:GetObject", f"{arn}/*"), ("s3:ListBucket", arn)}
    assert all(statement["Effect"] == "Allow" for statement in policy["Statement"])


def test_function_url_is_public_and_both_permissions_are_granted(on) -> None:
    url = on.mocks.one("aws:lambda/functionUrl:FunctionUrl").inputs
    assert url["authorizationType"] == "NONE"  # OAC would need x-amz-content-sha256 on POST
    permissions = {
        p.inputs["action"]: p.inputs for p in on.mocks.of_type("aws:lambda/permission:Permission")
    }
    assert set(permissions) == {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}
    assert permissions["lambda:InvokeFunctionUrl"]["functionUrlAuthType"] == "NONE"
    assert permissions["lambda:InvokeFunction"]["invokedViaFunctionUrl"] is True


def test_distribution_origin_and_behaviour(on) -> None:
    inputs = distribution(on)
    origins = {o["originId"]: o for o in unwrap_secrets(inputs["origins"])}
    origin = origins["mcp-function"]
    assert origin["domainName"] == urlsplit(FUNCTION_URL).hostname
    assert "originAccessControlId" not in origin
    assert origin["customOriginConfig"]["originProtocolPolicy"] == "https-only"
    assert origin["customOriginConfig"]["originSslProtocols"] == ["TLSv1.2"]
    assert origin["customHeaders"] == [{"name": "x-origin-verify", "value": SECRET}]
    behaviours = inputs["orderedCacheBehaviors"]
    first = behaviours[0]
    assert first["pathPattern"] == "/mcp" and first["targetOriginId"] == "mcp-function"
    assert set(first["allowedMethods"]) == SEVEN_METHODS
    default = inputs["defaultCacheBehavior"]
    # The server card where clients look for it: beside /mcp and under /.well-known/mcp/
    cards = {b["pathPattern"]: b for b in behaviours[1:3]}
    assert set(cards) == {"/mcp/server-card", "/.well-known/mcp/*"}
    for behaviour in (first, *cards.values()):
        assert behaviour["targetOriginId"] == "mcp-function"
        assert behaviour["cachePolicyId"] == CACHING_DISABLED
        assert behaviour["originRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST  # never Host
        assert behaviour["viewerProtocolPolicy"] == "https-only"
        assert behaviour["responseHeadersPolicyId"] != default["responseHeadersPolicyId"]
    for card in cards.values():
        assert set(card["allowedMethods"]) == {"GET", "HEAD", "OPTIONS"}


def test_mcp_behaviour_has_its_own_headers_policy_with_post(on) -> None:
    """The shared policy's CORS section allows GET/HEAD/OPTIONS only: a browser's POST to
    /mcp would be refused after its preflight. /mcp gets POST, the same security headers."""
    inputs = distribution(on)
    policies = {
        p.id: p.inputs
        for p in on.mocks.of_type("aws:cloudfront/responseHeadersPolicy:ResponseHeadersPolicy")
    }
    mcp = policies[inputs["orderedCacheBehaviors"][0]["responseHeadersPolicyId"]]
    shared = policies[inputs["defaultCacheBehavior"]["responseHeadersPolicyId"]]
    cors = mcp["corsConfig"]
    assert set(cors["accessControlAllowMethods"]["items"]) == {"POST", "OPTIONS"}
    assert cors["accessControlAllowOrigins"]["items"] == ["*"]
    assert cors["originOverride"] is True
    assert cors["accessControlAllowCredentials"] is False
    assert {h.lower() for h in cors["accessControlAllowHeaders"]["items"]} >= {
        "content-type", "accept", "mcp-protocol-version", "mcp-session-id", "last-event-id"
    }  # fmt: skip
    assert set(cors["accessControlExposeHeaders"]["items"]) >= {"mcp-session-id"}
    assert mcp["securityHeadersConfig"] == shared["securityHeadersConfig"]
    assert mcp["customHeadersConfig"] == shared["customHeadersConfig"]
    assert "POST" not in shared["corsConfig"]["accessControlAllowMethods"]["items"]
    # AWS's rules run over the declared resources as they are: the origins hold a secret
    # (the MCP origin's header), which the rules unwrap themselves.
    assert aws_rules.check(on.mocks.resources) == []


def test_no_custom_domain_needed(root: Path) -> None:
    """The function depends on the bucket only, so the distribution's own domain works:
    the discovery document names https://<distribution>/mcp (no cycle)."""
    settings = config(root)
    plain = SiteConfig(
        region="eu-west-1",
        site_dir=settings.site_dir,
        dist_dir=root / "dist-no-domain",
        mcp=settings.mcp,
    )
    run = run_program(plain)
    assert run.mocks.one("aws:lambda/function:Function")
    discovery = json.loads((root / "dist-no-domain" / discovery_key(root)).read_bytes())
    assert discovery["protocols"]["mcp"]["endpoint"] == f"https://{DISTRIBUTION_DOMAIN}/mcp"
    assert aws_rules.check(run.mocks.resources) == []


def test_config_rules(root: Path) -> None:
    with pytest.raises(ConfigError, match="at least 32"):
        McpServerConfig(origin_secret="short")
    with pytest.raises(ConfigError, match="mcpReservedConcurrency"):
        McpServerConfig(origin_secret=SECRET, reserved_concurrency=0)
    with pytest.raises(ConfigError, match="make mcp-layer"):
        run_program(config(root, layer_dir=root / "no-layer-here"))


@pytest.mark.parametrize("name", ["Host", "X-Amz-Secret", "x-edge-origin", "Cookie"])
def test_origin_header_cloudfront_refuses_is_refused_first(name: str) -> None:
    from infra import mcp_function

    with pytest.raises(ConfigError, match="CloudFront cannot add"):
        mcp_function.check_origin_header(name)
    assert mcp_function.check_origin_header("x-origin-verify") == "x-origin-verify"


def test_package_size_limits(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda refuses a package over 250 MB unzipped or a direct upload over 50 MB; the
    package is code and the SDK layer only, but the preview still says so first. The
    limits are scaled down here, the rule is the same."""
    from infra import mcp_function

    layer = root / "layer"
    code = sum(
        p.stat().st_size for package in PACKAGES for p in (REPO / package).rglob("*") if p.is_file()
    )
    baseline = code + sum(p.stat().st_size for p in layer.rglob("*") if p.is_file())
    monkeypatch.setattr(mcp_function, "UNZIPPED_LIMIT", baseline)
    with pytest.raises(ConfigError, match="unzipped"):
        mcp_function.check_package_size(layer)
    monkeypatch.setattr(mcp_function, "UNZIPPED_LIMIT", baseline + 1)
    mcp_function.check_package_size(layer)
    monkeypatch.setattr(mcp_function, "ZIPPED_DIRECT_LIMIT", code)
    with pytest.raises(ConfigError, match="directly uploaded"):
        mcp_function.check_package_size(layer)


# --- the handler over real HTTP ----------------------------------------------------------


class FunctionUrlEmulator(BaseHTTPRequestHandler):
    """What a function URL does: HTTP request -> payload 2.0 event -> handler -> response."""

    protocol_version = "HTTP/1.1"
    origin_secret: str | None = SECRET  # what CloudFront adds; None: a direct caller

    def _invoke(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.server.origin_secret is not None:  # type: ignore[attr-defined]
            headers["x-origin-verify"] = self.server.origin_secret  # type: ignore[attr-defined]
        event = {
            "version": "2.0",
            "rawPath": self.path.split("?")[0],
            "headers": headers,
            "requestContext": {"http": {"method": self.command}},
            "body": body.decode() if body else None,
            "isBase64Encoded": False,
        }
        result = lambda_handler.handler(event)
        payload = result["body"].encode()
        self.send_response(result["statusCode"])
        for name, value in result["headers"].items():
            if name != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = _invoke

    def log_message(self, format: str, *args: object) -> None:
        pass


def emulator(secret: str | None) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FunctionUrlEmulator)
    server.origin_secret = secret  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def packaged(on: ProgramRun, root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """The handler as deployed: its bucket (moto) holding the files the program published
    (the same dist the SiteContent resource uploads), named by the function's own
    environment; the handler reads it through boto3."""
    variables = unwrap_secrets(on.mocks.one("aws:lambda/function:Function").inputs["environment"])
    bucket = variables["variables"]["MCP_BUCKET"]
    files = {
        "/" + str(p.relative_to(root / "dist-on")): p.read_bytes()
        for p in (root / "dist-on").rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name != "manifest.json"
    }
    with mock_aws():
        bucket_holding(bucket, files)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
        monkeypatch.setattr(lambda_handler, "_BUCKET", None)
        for name, value in variables["variables"].items():
            monkeypatch.setenv(name, value)
        yield files


def test_lambda_handler_serves_mcp_over_http(packaged: dict[str, bytes]) -> None:
    index = json.loads(packaged[paths.CONTENT_INDEX])
    faq = next(e["id"] for e in index["documents"] if e["content_type"] == "faq")

    async def go(url: str, mode: str) -> None:
        async with Client(url, mode=mode) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            assert {"get_faq", "search", "fetch"} <= set(tools)
            result = await client.call_tool("get_faq", {"faq_id": faq})
            assert result.content[0].text.encode() == packaged[paths.faq(faq)]

    for url in emulator(SECRET):
        run(go, url, "legacy")
        run(go, url, "2026-07-28")
        request = urllib.request.Request(url, method="GET")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 405 and caught.value.headers["Allow"] == "POST"


def test_lambda_handler_answers_a_cors_preflight(packaged: dict[str, bytes]) -> None:
    from tests.test_mcp_server import PREFLIGHT, check_preflight

    for url in emulator(SECRET):
        request = urllib.request.Request(url, method="OPTIONS", headers=PREFLIGHT)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.read() == b""
            check_preflight(response.status, response.headers)


@pytest.mark.parametrize("secret", [None, "wrong-secret-of-the-same-size-0123456"])
def test_lambda_handler_refuses_requests_that_bypass_the_cdn(packaged, secret) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    for url in emulator(secret):
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 403


def test_lambda_handler_refuses_a_body_over_the_limit_over_http(packaged) -> None:
    """End to end through the function-URL emulator: the contract's limit, a JSON-RPC
    error an MCP client can read (tests/test_mcp_body_limit.py has the cases)."""
    from agent_contract.mcp_endpoint import MCP_MAX_BODY

    for url in emulator(SECRET):
        request = urllib.request.Request(
            url,
            data=b" " * (MCP_MAX_BODY + 1),
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 413
        answer = json.loads(caught.value.read())
        assert answer["error"]["code"] == -32600 and str(MCP_MAX_BODY) in answer["error"]["message"]
