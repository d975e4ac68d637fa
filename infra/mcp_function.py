"""The live MCP server on AWS (opt-in, `mcpServer: true`): a Lambda function URL at /mcp.

Returns what the distribution needs: an origin and ordered cache behaviours. Sources
for every AWS behaviour relied on are in docs/decisions.md ("MCP server on AWS", and
"MCP answers sized for agents, the Lambda reading the bucket, the server card").

- The content: none packaged. The function reads the published files from the bucket on
  demand (agent_mcp.s3), through a role allowed s3:GetObject on the bucket's objects
  and s3:ListBucket on the bucket (so a missing key is a 404, not a 403) and nothing
  else of S3. So it serves a site of any size, its code does not change when the
  content does (a publish does not redeploy it), and it needs no custom domain: it
  depends on nothing the distribution is made from.
- The way in: a function URL with auth NONE, reachable only with a secret header that
  CloudFront adds as an origin custom header and the handler checks in constant time.
  Origin access control is not an option: with OAC, Lambda needs `x-amz-content-sha256`
  on every POST ("Lambda doesn't support unsigned payloads"), and MCP clients send none.
- The Host header must not reach a function URL (it routes on its own host name): the
  behaviours use the managed origin request policy AllViewerExceptHostHeader.
- Nothing is cached (managed CachingDisabled); /mcp allows all seven methods, the only
  set that includes POST; the handler refuses all but POST (and a CORS preflight) with
  405. The server card's paths (SEP-2127) go to the function too, GET/HEAD/OPTIONS.
  Its own response headers policy: CORS with POST (CORS below).
- Reserved concurrency is the throttle: a flood of agents cannot run up the bill past it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pulumi_aws as aws

from agent_contract.mcp_endpoint import (
    BUCKET_ENV,
    MCP_PATH,
    ORIGIN_SECRET_ENV,
    ORIGIN_VERIFY_HEADER,
    SERVER_CARD_PATH,
    SERVER_CARD_WELL_KNOWN,
)
from infra.config import PROJECT_ROOT, ConfigError, SiteConfig

ORIGIN_ID = "mcp-function"
#: The header CloudFront adds and the handler checks: one name, the contract's.
ORIGIN_HEADER = ORIGIN_VERIFY_HEADER
RUNTIME = "python3.12"
#: Seconds Lambda lets an invocation run. The handler answers first: a tool call's limit
#: (agent_mcp.server.CallLimits.timeout) and the HTTP bridge's (agent_mcp.http.
#: REQUEST_TIMEOUT) are both shorter, so a slow call is a JSON-RPC error, not Lambda's
#: timeout (tests/test_mcp_concurrency.py checks the order).
FUNCTION_TIMEOUT = 30
HANDLER = "agent_mcp.lambda_handler.handler"
#: CloudFront allows GET/HEAD, GET/HEAD/OPTIONS, or all seven; only the last has POST.
ALL_METHODS = ["GET", "HEAD", "OPTIONS", "PUT", "POST", "PATCH", "DELETE"]
READ_METHODS = ["GET", "HEAD", "OPTIONS"]
CACHED_METHODS = ["GET", "HEAD"]
#: The server card's paths, as CloudFront path patterns (the card beside /mcp; the
#: well-known card and the MCP catalog beside it), each sent to the function.
CARD_PATTERNS = (
    SERVER_CARD_PATH,
    SERVER_CARD_WELL_KNOWN.rsplit("/", 1)[0] + "/*",  # /.well-known/mcp/*
)
#: The only S3 actions the function's role is allowed, on its bucket only: read an
#: object, and list (so that a missing key answers 404 NoSuchKey, not 403).
OBJECT_ACTIONS = ("s3:GetObject",)
BUCKET_ACTIONS = ("s3:ListBucket",)
#: The /mcp response headers policy's CORS section (methods, allow headers, expose
#: headers), as agent_mcp.http answers a preflight: browser-based MCP clients POST.
CORS = (
    ["POST", "OPTIONS"],
    ["content-type", "accept", "mcp-protocol-version", "mcp-session-id", "last-event-id"],
    ["mcp-session-id", "mcp-protocol-version"],
)
#: AWS managed policies (ids are global constants).
CACHING_DISABLED_POLICY_ID = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST_HEADER_POLICY_ID = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
BASIC_EXECUTION_POLICY = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
#: Lambda's package limits (docs/decisions.md): the function and its layers unzipped,
#: and a .zip uploaded directly (Pulumi uploads the code directly, not through S3).
UNZIPPED_LIMIT = 262_144_000  # "Unzipped size must be smaller than 262144000 bytes"
ZIPPED_DIRECT_LIMIT = 50 * 1024 * 1024
#: The packages the handler imports from this repository (the SDK comes in the layer).
PACKAGES = ("agent_mcp", "agent_contract", "agent_client")


#: Headers CloudFront refuses to add to origin requests (CloudFront Developer Guide, "Custom
#: headers that CloudFront can't add to origin requests"; the names this program could
#: plausibly pick, and the two reserved prefixes).
DENIED_ORIGIN_HEADERS = frozenset(
    {"cache-control", "connection", "content-length", "cookie", "host", "if-match",
     "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "range",
     "transfer-encoding", "upgrade", "via"}
)  # fmt: skip
DENIED_ORIGIN_HEADER_PREFIXES = ("x-amz-", "x-edge-")


def check_origin_header(name: str) -> str:
    lowered = name.lower()
    if lowered in DENIED_ORIGIN_HEADERS or lowered.startswith(DENIED_ORIGIN_HEADER_PREFIXES):
        raise ConfigError(f"origin custom header {name!r}: CloudFront cannot add this header")
    return name


@dataclass(frozen=True)
class McpOrigin:
    origin: aws.cloudfront.DistributionOriginArgs
    behaviours: list[aws.cloudfront.DistributionOrderedCacheBehaviorArgs]
    function: aws.lambda_.Function
    function_url: aws.lambda_.FunctionUrl


def mcp_endpoint(config: SiteConfig, base_url: str) -> str | None:
    """The endpoint the discovery document names (the distribution's base URL, custom
    domain or not, + /mcp), or None when the server is off."""
    return f"{base_url}{MCP_PATH}" if config.mcp else None


def code_archive() -> pulumi.AssetArchive:
    """The handler's code only: no content (the function reads the bucket).

    Source files are listed one by one (no folder archive): a stray __pycache__ would
    change the archive, and with it the function, on every preview.
    """
    assets: dict[str, pulumi.Asset | pulumi.Archive] = {}
    for package in PACKAGES:
        for source in sorted((PROJECT_ROOT / package).rglob("*.py")):
            assets[str(source.relative_to(PROJECT_ROOT))] = pulumi.FileAsset(str(source))
    return pulumi.AssetArchive(assets)


def _folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def check_package_size(layer_dir: Path) -> None:
    """Refuse, at preview, a package Lambda would refuse at deploy time. The package is
    the code and the SDK layer, the same size for a site of any size."""
    code = sum(_folder_size(PROJECT_ROOT / package) for package in PACKAGES)
    unzipped = code + _folder_size(layer_dir)
    if unzipped >= UNZIPPED_LIMIT:
        raise ConfigError(
            f"mcpServer: the function would hold {unzipped / 1e6:.1f} MB unzipped (code and "
            f"SDK layer); Lambda's limit is {UNZIPPED_LIMIT / 1e6:.1f} MB"
        )
    if code >= ZIPPED_DIRECT_LIMIT:
        raise ConfigError(
            f"mcpServer: the function's code is {code / 1e6:.1f} MB; a directly uploaded "
            f"package must stay under {ZIPPED_DIRECT_LIMIT / 1e6:.1f} MB"
        )


def read_policy(bucket_arn: str) -> str:
    """The role's only S3 permissions: read the bucket's objects, list the bucket."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ReadPublishedFiles",
                    "Effect": "Allow",
                    "Action": list(OBJECT_ACTIONS),
                    "Resource": f"{bucket_arn}/*",
                },
                {
                    "Sid": "ListForNotFound",
                    "Effect": "Allow",
                    "Action": list(BUCKET_ACTIONS),
                    "Resource": bucket_arn,
                },
            ],
        },
        indent=2,
    )


def declare(
    name: str,
    config: SiteConfig,
    response_headers_policy_id: pulumi.Input[str],
    bucket: aws.s3.Bucket,
    opts: pulumi.ResourceOptions,
) -> McpOrigin:
    mcp = config.mcp
    assert mcp is not None, "declare() only when mcpServer is on"
    layer_python = Path(mcp.layer_dir) / "python"
    if not layer_python.is_dir():
        raise ConfigError(
            f"mcpServer: {layer_python} is missing; run `make mcp-layer` (the mcp SDK and "
            "its dependencies, built for the Lambda runtime) before preview or up"
        )
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
            '{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
        ),
        opts=opts,
    )
    aws.iam.RolePolicyAttachment(
        f"{name}-logs", role=role.name, policy_arn=BASIC_EXECUTION_POLICY, opts=opts
    )
    aws.iam.RolePolicy(
        f"{name}-read-bucket", role=role.id, policy=bucket.arn.apply(read_policy), opts=opts
    )
    layer = aws.lambda_.LayerVersion(
        f"{name}-sdk",
        layer_name=f"{name}-sdk",
        code=pulumi.FileArchive(str(mcp.layer_dir)),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=["x86_64"],
        opts=opts,
    )
    check_package_size(Path(mcp.layer_dir))
    function = aws.lambda_.Function(
        f"{name}-function",
        runtime=RUNTIME,
        handler=HANDLER,
        architectures=["x86_64"],
        role=role.arn,
        code=code_archive(),
        layers=[layer.arn],
        memory_size=512,
        timeout=FUNCTION_TIMEOUT,
        reserved_concurrent_executions=mcp.reserved_concurrency,
        environment=aws.lambda_.FunctionEnvironmentArgs(
            variables={
                ORIGIN_SECRET_ENV: pulumi.Output.secret(mcp.origin_secret),
                BUCKET_ENV: bucket.bucket,
            }
        ),
        opts=opts,
    )
    function_url = aws.lambda_.FunctionUrl(
        f"{name}-url",
        function_name=function.name,
        authorization_type="NONE",
        invoke_mode="BUFFERED",
        opts=opts,
    )
    # Auth NONE still needs a resource policy granting the public; function URLs created
    # since October 2025 need both actions.
    aws.lambda_.Permission(
        f"{name}-invoke-url",
        action="lambda:InvokeFunctionUrl",
        function=function.name,
        principal="*",
        function_url_auth_type="NONE",
        opts=opts,
    )
    aws.lambda_.Permission(
        f"{name}-invoke",
        action="lambda:InvokeFunction",
        function=function.name,
        principal="*",
        invoked_via_function_url=True,
        opts=opts,
    )
    origin = aws.cloudfront.DistributionOriginArgs(
        origin_id=ORIGIN_ID,
        domain_name=function_url.function_url.apply(lambda url: urlsplit(url or "").hostname or ""),
        custom_origin_config=aws.cloudfront.DistributionOriginCustomOriginConfigArgs(
            http_port=80,
            https_port=443,
            origin_protocol_policy="https-only",
            origin_ssl_protocols=["TLSv1.2"],
        ),
        custom_headers=[
            aws.cloudfront.DistributionOriginCustomHeaderArgs(
                name=check_origin_header(ORIGIN_HEADER),
                value=pulumi.Output.secret(mcp.origin_secret),
            )
        ],
    )

    def behaviour(pattern: str, methods: list[str]) -> Any:
        return aws.cloudfront.DistributionOrderedCacheBehaviorArgs(
            path_pattern=pattern,
            target_origin_id=ORIGIN_ID,
            viewer_protocol_policy="https-only",
            allowed_methods=methods,
            cached_methods=CACHED_METHODS,
            compress=True,
            cache_policy_id=CACHING_DISABLED_POLICY_ID,
            origin_request_policy_id=ALL_VIEWER_EXCEPT_HOST_HEADER_POLICY_ID,
            response_headers_policy_id=response_headers_policy_id,
        )

    behaviours = [
        behaviour(MCP_PATH, ALL_METHODS),
        *(behaviour(pattern, READ_METHODS) for pattern in CARD_PATTERNS),
    ]
    return McpOrigin(origin, behaviours, function, function_url)
