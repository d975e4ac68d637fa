"""AWS's rules (infra/aws_rules.py) over every resource the program declares, both
variants, and each rule fed an input that breaks it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pulumi
import pytest

from benchmarks import sitegen
from infra import aws_rules
from infra.publisher import invalidation_paths
from tests.pulumi_harness import ProgramRun, Registered, run_program
from tests.test_infra import make_config


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProgramRun]:
    return {
        "no-domain": run_program(make_config(tmp_path_factory.mktemp("rules-plain"))),
        "custom-domain": run_program(
            make_config(
                tmp_path_factory.mktemp("rules-domain"),
                domain="agents.parlance.example",
                hosted_zone_id="Z0123456789ABC",
                web_acl_arn="arn:aws:wafv2:us-east-1:123456789012:global/webacl/agents/1a2b",
                log_bucket="parlance-logs.s3.amazonaws.com",
                hsts_preload=True,
            )
        ),
    }


@pytest.mark.parametrize("variant", ["no-domain", "custom-domain"])
def test_the_program_breaks_no_aws_rule(variants: dict[str, ProgramRun], variant: str) -> None:
    resources = variants[variant].mocks.resources
    checked = {r.typ for r in resources} & {
        aws_rules.DISTRIBUTION, aws_rules.CACHE_POLICY, aws_rules.HEADERS_POLICY,
        aws_rules.BUCKET_CORS, aws_rules.FUNCTION, aws_rules.BUCKET_ENCRYPTION,
    }  # fmt: skip
    assert len(checked) == 6, "the rules see the resources they are about"
    assert aws_rules.check(resources) == []


@dataclass
class Mutable:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str | None


def _mutate(run: ProgramRun, typ: str, change: Callable[[dict[str, Any]], None]) -> list[Mutable]:
    resources = [
        Mutable(r.typ, r.name, copy.deepcopy(r.inputs), r.provider) for r in run.mocks.resources
    ]
    target = next(r for r in resources if r.typ == typ)  # the first of its type
    change(target.inputs)
    return resources


def _rules_hit(resources: list[Mutable]) -> set[str]:
    return {violation.rule for violation in aws_rules.check(resources)}


def _origin(inputs: dict[str, Any]) -> dict[str, Any]:
    return inputs["origins"][0]


BREAKS: dict[str, tuple[str, str, Callable[[dict[str, Any]], None]]] = {
    # The failure: Access-Control-Allow-Origin back among the custom headers.
    "allow-origin-as-custom-header": (
        aws_rules.HEADERS_POLICY,
        "response-policy-custom-header",
        lambda i: i.update(customHeadersConfig={"items": [
            {"header": "Access-Control-Allow-Origin", "value": "*", "override": True}]}),
    ),
    "csp-as-custom-header": (
        aws_rules.HEADERS_POLICY,
        "response-policy-custom-header",
        lambda i: i.update(customHeadersConfig={"items": [
            {"header": "Content-Security-Policy", "value": "x", "override": True}]}),
    ),
    "cors-credentials-with-star": (
        aws_rules.HEADERS_POLICY,
        "response-policy-cors",
        lambda i: i["corsConfig"].update(accessControlAllowCredentials=True),
    ),
    "cors-empty-allow-headers": (
        aws_rules.HEADERS_POLICY,
        "response-policy-cors",
        lambda i: i["corsConfig"].update(accessControlAllowHeaders={"items": []}),
    ),
    "origin-header-on-denylist": (
        aws_rules.DISTRIBUTION,
        "origin-custom-header",
        lambda i: _origin(i).update(customHeaders=[{"name": "Host", "value": "x"}]),
    ),
    "origin-header-x-amz": (
        aws_rules.DISTRIBUTION,
        "origin-custom-header",
        lambda i: _origin(i).update(customHeaders=[{"name": "X-Amz-Date", "value": "x"}]),
    ),
    "eleven-origin-headers": (
        aws_rules.DISTRIBUTION,
        "origin-custom-header",
        lambda i: _origin(i).update(
            customHeaders=[{"name": f"X-H{n}", "value": "v"} for n in range(11)]
        ),
    ),
    "oac-on-website-endpoint": (
        aws_rules.DISTRIBUTION,
        "oac-origin",
        lambda i: _origin(i).update(
            domainName="agent-access-content.s3-website-eu-west-1.amazonaws.com"
        ),
    ),
    "ttl-order": (
        aws_rules.CACHE_POLICY,
        "cache-policy-ttl",
        lambda i: i.update(minTtl=10, defaultTtl=5),
    ),
    "ttl-zero-with-compression": (
        aws_rules.CACHE_POLICY,
        "cache-policy-ttl",
        lambda i: i.update(minTtl=0, defaultTtl=0, maxTtl=0),
    ),
    "allowed-methods-not-a-set-cloudfront-offers": (
        aws_rules.DISTRIBUTION,
        "behaviour-methods",
        lambda i: i["defaultCacheBehavior"].update(allowedMethods=["GET", "HEAD", "POST"]),
    ),
    "cached-methods-outside-allowed": (
        aws_rules.DISTRIBUTION,
        "behaviour-methods",
        lambda i: i["defaultCacheBehavior"].update(
            allowedMethods=["GET", "HEAD"], cachedMethods=["GET", "HEAD", "OPTIONS"]
        ),
    ),
    "root-object-with-slash": (
        aws_rules.DISTRIBUTION,
        "distribution-shape",
        lambda i: i.update(defaultRootObject="/llms.txt"),
    ),
    "error-page-without-slash": (
        aws_rules.DISTRIBUTION,
        "distribution-shape",
        lambda i: i["customErrorResponses"][0].update(responsePagePath="errors/404.json"),
    ),
    "s3-cors-options-method": (
        aws_rules.BUCKET_CORS,
        "s3-cors",
        lambda i: i["corsRules"][0].update(allowedMethods=["GET", "HEAD", "OPTIONS"]),
    ),
    "acm-arn-outside-us-east-1": (
        aws_rules.DISTRIBUTION,
        "acm-region",
        lambda i: i.update(viewerCertificate={
            "acmCertificateArn": "arn:aws:acm:eu-west-1:123456789012:certificate/x",
            "sslSupportMethod": "sni-only", "minimumProtocolVersion": "TLSv1.2_2021"}),
    ),
    "default-certificate-with-tls12": (
        aws_rules.DISTRIBUTION,
        "viewer-tls",
        lambda i: i.update(viewerCertificate={
            "cloudfrontDefaultCertificate": True, "minimumProtocolVersion": "TLSv1.2_2021"}),
    ),
    "bare-tls12-policy-name": (
        aws_rules.DISTRIBUTION,
        "viewer-tls",
        lambda i: i.update(aliases=["a.example.com"], viewerCertificate={
            "acmCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/x",
            "sslSupportMethod": "sni-only", "minimumProtocolVersion": "TLSv1.2"}),
    ),
    "regional-web-acl": (
        aws_rules.DISTRIBUTION,
        "web-acl",
        lambda i: i.update(webAclId="arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/a/1"),
    ),
    "classic-waf-id": (
        aws_rules.DISTRIBUTION,
        "web-acl",
        lambda i: i.update(webAclId="473e64fd-f30b-4765-81a0-62ad96dd167a"),
    ),
    "function-name-with-a-dot": (
        aws_rules.FUNCTION,
        "cloudfront-function",
        lambda i: i.update(name="agent-access-prod.eu-markdown"),
    ),
    "function-name-too-long": (
        aws_rules.FUNCTION,
        "cloudfront-function",
        lambda i: i.update(name="f" * 65),
    ),
    "function-runtime-unknown": (
        aws_rules.FUNCTION,
        "cloudfront-function",
        lambda i: i.update(runtime="nodejs20.x"),
    ),
    "function-code-over-10-kb": (
        aws_rules.FUNCTION,
        "cloudfront-function",
        lambda i: i.update(code=i["code"] + "//" + "x" * 10 * 1024),
    ),
    "function-not-published-but-associated": (
        aws_rules.FUNCTION,
        "cloudfront-function",
        lambda i: i.update(publish=False),
    ),
    "function-on-origin-request": (
        aws_rules.DISTRIBUTION,
        "cloudfront-function",
        lambda i: _negotiated(i)["functionAssociations"][0].update(eventType="origin-request"),
    ),
    "two-functions-on-viewer-request": (
        aws_rules.DISTRIBUTION,
        "cloudfront-function",
        lambda i: _negotiated(i)["functionAssociations"].append(
            dict(_negotiated(i)["functionAssociations"][0])),
    ),
    # The publisher's drift check compares ETags with MD5s (issue 24): only SSE-S3 (or
    # no encryption) keeps a single PUT's ETag the MD5 of its bytes.
    "bucket-encrypted-with-kms": (
        aws_rules.BUCKET_ENCRYPTION,
        "etag-is-md5",
        lambda i: i["rules"][0]["applyServerSideEncryptionByDefault"].update(
            sseAlgorithm="aws:kms", kmsMasterKeyId="alias/site"),
    ),
    "bucket-encrypted-with-dsse-kms": (
        aws_rules.BUCKET_ENCRYPTION,
        "etag-is-md5",
        lambda i: i["rules"][0]["applyServerSideEncryptionByDefault"].update(
            sseAlgorithm="aws:kms:dsse"),
    ),
    "seventy-six-behaviours": (
        aws_rules.DISTRIBUTION,
        "distribution-shape",
        lambda i: i["orderedCacheBehaviors"].extend(
            dict(i["orderedCacheBehaviors"][0], pathPattern=f"/x{n}/*") for n in range(75)),
    ),
}  # fmt: skip


def _negotiated(inputs: dict[str, Any]) -> dict[str, Any]:
    return next(b for b in inputs["orderedCacheBehaviors"] if b.get("functionAssociations"))


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_each_rule_fails_on_a_violating_input(variants: dict[str, ProgramRun], case: str) -> None:
    typ, rule, change = BREAKS[case]
    resources = _mutate(variants["no-domain"], typ, change)
    assert rule in _rules_hit(resources), aws_rules.check(resources)


def test_a_certificate_requested_outside_us_east_1_is_caught(
    variants: dict[str, ProgramRun],
) -> None:
    run = variants["custom-domain"]
    regional = next(
        r
        for r in run.mocks.of_type(aws_rules.AWS_PROVIDER)
        if r.inputs.get("region") != "us-east-1"
    )
    resources: list[Any] = []
    for resource in run.mocks.resources:
        if resource.typ == aws_rules.CERTIFICATE:
            # The same certificate, created through the stack's regional provider.
            provider = f"urn:pulumi:test::agent-access::pulumi:providers:aws::{regional.name}::x"
            resource = replace(resource, provider=provider)
        resources.append(resource)
    assert "acm-region" in {v.rule for v in aws_rules.check(resources)}


# The MCP function (issue 25), broken on the variant that declares it.
def _code_with(extra: str) -> Any:
    def change(inputs: dict[str, Any]) -> None:
        inputs["code"] = pulumi.AssetArchive(
            {**inputs["code"].assets, extra: pulumi.StringAsset("{}")}
        )

    return change


def _statement(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        policy = json.loads(inputs["policy"])
        change(policy["Statement"][0])
        inputs["policy"] = json.dumps(policy)

    return edit


MCP_BREAKS: dict[str, tuple[str, str, Callable[[dict[str, Any]], None]]] = {
    "no-throttle": (aws_rules.LAMBDA_FUNCTION, "mcp-function",
                    lambda i: i.pop("reservedConcurrentExecutions")),
    "throttle-past-the-account-pool": (aws_rules.LAMBDA_FUNCTION, "mcp-function",
                                       lambda i: i.update(reservedConcurrentExecutions=901)),
    "no-origin-secret": (aws_rules.LAMBDA_FUNCTION, "mcp-function",
                         lambda i: i.update(environment={"variables": {
                             k: v for k, v in aws_rules.unwrap_secrets(i["environment"])[
                                 "variables"].items() if k != "MCP_ORIGIN_SECRET"}})),
    "content-packaged": (aws_rules.LAMBDA_FUNCTION, "mcp-function",
                         _code_with("site/api/v1/content/index.json")),
    "role-may-write": (aws_rules.ROLE_POLICY, "mcp-bucket-read",
                       _statement(lambda s: s.update(Action=["s3:GetObject", "s3:PutObject"]))),
    "role-reads-every-bucket": (aws_rules.ROLE_POLICY, "mcp-bucket-read",
                                _statement(lambda s: s.update(Resource="arn:aws:s3:::*"))),
    "role-has-s3-star": (aws_rules.ROLE_POLICY, "mcp-bucket-read",
                         _statement(lambda s: s.update(Action="s3:*"))),
    "role-cannot-read": (aws_rules.ROLE_POLICY, "mcp-bucket-read",
                         _statement(lambda s: s.update(Action="s3:GetObjectTagging"))),
}  # fmt: skip


@pytest.fixture(scope="module")
def with_mcp(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    from tests.test_mcp_infra import config

    root = tmp_path_factory.mktemp("rules-mcp")
    sitegen.generate(root / "site_data", 3)
    return run_program(config(root))


def test_the_mcp_variant_breaks_no_aws_rule(with_mcp: ProgramRun) -> None:
    assert with_mcp.mocks.of_type(aws_rules.LAMBDA_FUNCTION)
    assert aws_rules.check(with_mcp.mocks.resources) == []


@pytest.mark.parametrize("case", sorted(MCP_BREAKS))
def test_each_mcp_rule_fails_on_a_violating_input(with_mcp: ProgramRun, case: str) -> None:
    typ, rule, change = MCP_BREAKS[case]
    resources = _mutate(with_mcp, typ, change)
    assert rule in _rules_hit(resources), aws_rules.check(resources)


def test_every_rule_is_run_and_has_a_breaking_case() -> None:
    assert {rule for _, rule, _ in [*BREAKS.values(), *MCP_BREAKS.values()]} == {
        "response-policy-custom-header", "response-policy-cors", "origin-custom-header",
        "oac-origin",
        "cache-policy-ttl", "behaviour-methods", "distribution-shape", "s3-cors",
        "acm-region", "viewer-tls", "web-acl", "cloudfront-function", "etag-is-md5",
        "mcp-function", "mcp-bucket-read",
    }  # fmt: skip
    assert len(aws_rules.RULES) == 15


def test_origin_is_not_on_cloudfronts_origin_header_denylist() -> None:
    """The design relies on it: the denylist AWS documents does not name Origin."""
    assert "origin" not in aws_rules.ORIGIN_HEADER_DENYLIST
    assert "host" in aws_rules.ORIGIN_HEADER_DENYLIST


@pytest.mark.parametrize("count", [0, 1, 99, 100, 101, 2_000, 20_000])
def test_the_publishers_invalidations_keep_cloudfronts_rules(count: int) -> None:
    changed = [f"/api/v1/content/doc-{n:05}.json" for n in range(count)]
    changed += [f"/api/v1/faq/q{n:05}.json" for n in range(count // 3)]
    paths = invalidation_paths(changed)
    if changed:
        assert aws_rules.invalidation_batch(paths) == []


@pytest.mark.parametrize(
    "paths",
    [["api/v1/x.json"], ["/api/*/x.json"], [f"/d{n}/*" for n in range(16)],
     [f"/f{n}" for n in range(3001)], []],
)  # fmt: skip
def test_invalidation_rule_fails_on_bad_batches(paths: list[str]) -> None:
    assert aws_rules.invalidation_batch(paths)


def test_registered_matches_the_rules_protocol() -> None:
    sample: aws_rules.Declared = Registered("t", "n", {}, None, "id")
    assert aws_rules.check([sample]) == []


def test_config_refuses_what_the_web_acl_rule_refuses(tmp_path: Path) -> None:
    from infra.config import ConfigError

    with pytest.raises(ConfigError, match="webAclArn"):
        make_config(
            tmp_path, web_acl_arn="arn:aws:wafv2:us-east-1:123456789012:regional/webacl/a/1"
        )


def test_a_violation_inside_a_secret_input_is_still_found(variants: dict[str, ProgramRun]) -> None:
    """The engine wraps secret inputs (the MCP origin's header is one); the rules check
    what AWS will be sent, so a forbidden header hidden in a secret is reported."""

    def hide_a_forbidden_header(inputs: dict[str, Any]) -> None:
        origin = inputs["origins"][0]
        origin["customHeaders"] = [{"name": "Host", "value": "example.com"}]
        inputs["origins"] = {
            aws_rules.SECRET_SIG_KEY: aws_rules.SECRET_SIG,
            "value": inputs["origins"],
        }

    resources = _mutate(variants["no-domain"], aws_rules.DISTRIBUTION, hide_a_forbidden_header)
    assert any("Host" in str(violation) for violation in aws_rules.check(resources))
