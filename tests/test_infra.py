"""The Pulumi program under mocks: every security property as its own assertion.

Expected values are AWS's and the spec's (HTTPS only, CORS `*`, private bucket), written
out here, not read back from the module that sets them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent_contract import manifest as build_manifest
from content_builder.errors import SiteDataError
from infra.config import ConfigError, SiteConfig
from infra.program import discovery_path
from infra.site import function_source
from infra.site_content import decode_input
from tests import sites
from tests.conftest import REPO, run_cli
from tests.conftest import SPEC_SITE as SITE_DATA  # pins the spec's files and brand
from tests.pulumi_harness import (
    DISTRIBUTION_DOMAIN,
    ProgramRun,
    Registered,
    provider_of,
    run_program,
    site_content,
)

REGION = "eu-west-1"
TAGS = {"project": "agent-access", "stack": "test", "owner": "web-team"}
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/abcd-1234"


def make_config(tmp_path: Path, **overrides: object) -> SiteConfig:
    site = tmp_path / "site_data"
    if not site.exists():
        shutil.copytree(SITE_DATA, site)
    return SiteConfig(
        region=REGION, site_dir=site, dist_dir=tmp_path / "dist", tags=TAGS, **overrides
    )  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    """No options but a region: the CloudFront domain is the base URL."""
    return run_program(make_config(tmp_path_factory.mktemp("plain")))


@pytest.fixture(scope="module")
def custom_domain(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    return run_program(
        make_config(
            tmp_path_factory.mktemp("domain"),
            domain="agents.parlance.example",
            hosted_zone_id="Z0123456789ABC",
            web_acl_arn="arn:aws:wafv2:us-east-1:123456789012:global/webacl/agents/1",
            log_bucket="parlance-logs.s3.amazonaws.com",
            price_class="PriceClass_All",
            noncurrent_version_days=90,
        )
    )


def distribution(run: ProgramRun) -> dict:
    return run.mocks.one("aws:cloudfront/distribution:Distribution").inputs


def behaviours(run: ProgramRun) -> list[dict]:
    inputs = distribution(run)
    ordered = inputs.get("orderedCacheBehaviors") or []
    assert ordered, "the error behaviour exists, so 'every ordered behaviour' is not vacuous"
    return [inputs["defaultCacheBehavior"], *ordered]


# --- the bucket -----------------------------------------------------------------------


def test_public_access_block_sets_all_four_flags(plain: ProgramRun) -> None:
    block = plain.mocks.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    for flag in (
        "blockPublicAcls",
        "blockPublicPolicy",
        "ignorePublicAcls",
        "restrictPublicBuckets",
    ):
        assert block[flag] is True, flag
    assert block["bucket"] == plain.outputs["bucket_name"]


def test_object_ownership_disables_acls(plain: ProgramRun) -> None:
    controls = plain.mocks.one("aws:s3/bucketOwnershipControls:BucketOwnershipControls").inputs
    assert controls["rule"] == {"objectOwnership": "BucketOwnerEnforced"}


def test_default_encryption(plain: ProgramRun) -> None:
    encryption = plain.mocks.one(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ).inputs
    rule = encryption["rules"][0]
    assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] in ("AES256", "aws:kms")


def test_versioning_and_lifecycle(plain: ProgramRun, custom_domain: ProgramRun) -> None:
    versioning = plain.mocks.one("aws:s3/bucketVersioning:BucketVersioning").inputs
    assert versioning["versioningConfiguration"]["status"] == "Enabled"
    for run, days in ((plain, 30), (custom_domain, 90)):
        rules = run.mocks.one(
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
        ).inputs["rules"]
        assert len(rules) == 1 and rules[0]["status"] == "Enabled"
        assert rules[0]["noncurrentVersionExpiration"]["noncurrentDays"] == days
        assert rules[0]["abortIncompleteMultipartUpload"]["daysAfterInitiation"] >= 1
        assert rules[0]["filter"] == {"prefix": ""}, "the rule covers every object"


def test_bucket_cors_answers_preflight_for_any_origin(plain: ProgramRun) -> None:
    cors = plain.mocks.one("aws:s3/bucketCorsConfiguration:BucketCorsConfiguration").inputs
    (rule,) = cors["corsRules"]
    assert rule["allowedOrigins"] == ["*"]
    assert set(rule["allowedMethods"]) == {"GET", "HEAD"}
    assert rule["allowedHeaders"] == ["*"]
    # Browser agents read the ETag, the Link and the token estimate cross-origin.
    assert rule["exposeHeaders"] == ["ETag", "Link", "X-Markdown-Tokens"]
    assert rule["maxAgeSeconds"] > 0


def _policy(run: ProgramRun) -> dict:
    return json.loads(run.mocks.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])


def test_bucket_policy_denies_plain_http(plain: ProgramRun) -> None:
    deny = [s for s in _policy(plain)["Statement"] if s["Effect"] == "Deny"]
    assert len(deny) == 1
    assert deny[0]["Principal"] == "*" and deny[0]["Action"] == "s3:*"
    assert deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    bucket_arn = f"arn:aws:s3:::{plain.outputs['bucket_name']}"
    assert set(deny[0]["Resource"]) == {bucket_arn, bucket_arn + "/*"}


def test_bucket_policy_lets_only_this_distribution_read_and_list(plain: ProgramRun) -> None:
    allows = [s for s in _policy(plain)["Statement"] if s["Effect"] == "Allow"]
    distribution_arn = (
        f"arn:aws:cloudfront::123456789012:distribution/{plain.outputs['distribution_id']}"
    )
    bucket_arn = f"arn:aws:s3:::{plain.outputs['bucket_name']}"
    granted = {}
    for statement in allows:
        assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        assert statement["Condition"] == {"StringEquals": {"AWS:SourceArn": distribution_arn}}
        granted[statement["Action"]] = statement["Resource"]
    assert granted == {"s3:GetObject": bucket_arn + "/*", "s3:ListBucket": bucket_arn}


# --- CloudFront --------------------------------------------------------------------------


def test_origin_access_control(plain: ProgramRun) -> None:
    oac = plain.mocks.one("aws:cloudfront/originAccessControl:OriginAccessControl")
    assert oac.inputs["originAccessControlOriginType"] == "s3"
    assert oac.inputs["signingBehavior"] == "always"
    assert oac.inputs["signingProtocol"] == "sigv4"
    (origin,) = distribution(plain)["origins"]
    assert origin["originAccessControlId"] == oac.id
    assert "s3OriginConfig" not in origin or not origin["s3OriginConfig"].get(
        "originAccessIdentity"
    )


def test_https_only_on_every_behaviour(plain: ProgramRun) -> None:
    for behaviour in behaviours(plain):
        assert behaviour["viewerProtocolPolicy"] == "https-only"


def test_methods_and_compression_on_every_behaviour(plain: ProgramRun) -> None:
    for behaviour in behaviours(plain):
        assert set(behaviour["allowedMethods"]) == {"GET", "HEAD", "OPTIONS"}
        assert set(behaviour["cachedMethods"]) == {"GET", "HEAD"}
        assert behaviour["compress"] is True


def test_cache_keys_ignore_cookies_and_query_strings(plain: ProgramRun) -> None:
    policies = {
        p.id: p.inputs for p in plain.mocks.of_type("aws:cloudfront/cachePolicy:CachePolicy")
    }
    for behaviour in behaviours(plain):
        parameters = policies[behaviour["cachePolicyId"]][
            "parametersInCacheKeyAndForwardedToOrigin"
        ]
        assert parameters["cookiesConfig"]["cookieBehavior"] == "none"
        assert parameters["queryStringsConfig"]["queryStringBehavior"] == "none"
        assert parameters["headersConfig"]["headerBehavior"] == "none"
        assert parameters["enableAcceptEncodingGzip"] is True
        assert parameters["enableAcceptEncodingBrotli"] is True


def test_error_behaviour_caches_briefly(plain: ProgramRun) -> None:
    policies = {
        p.id: p.inputs for p in plain.mocks.of_type("aws:cloudfront/cachePolicy:CachePolicy")
    }
    (errors,) = [b for b in behaviours(plain) if b.get("pathPattern") == "/errors/*"]
    assert policies[errors["cachePolicyId"]]["maxTtl"] <= 60


def test_origin_request_policy_forwards_cors_headers_to_s3(plain: ProgramRun) -> None:
    # AWS's managed "CORS-S3Origin" policy (Origin, Access-Control-Request-Method/-Headers).
    for behaviour in behaviours(plain):
        assert behaviour["originRequestPolicyId"] == "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf"


def _headers_policy(run: ProgramRun) -> Registered:
    """The policy of the default behaviour (the negotiated behaviours' copy adds Vary)."""
    policy_id = distribution(run)["defaultCacheBehavior"]["responseHeadersPolicyId"]
    [policy] = [
        p
        for p in run.mocks.of_type("aws:cloudfront/responseHeadersPolicy:ResponseHeadersPolicy")
        if p.id == policy_id
    ]
    return policy


def test_cors_comes_from_the_cors_section_and_s3_never_custom_headers(
    plain: ProgramRun,
) -> None:
    policy = _headers_policy(plain)
    custom = (policy.inputs.get("customHeadersConfig") or {}).get("items") or []
    assert not [h for h in custom if h["header"].lower().startswith("access-control-")]
    cors = policy.inputs["corsConfig"]
    assert cors["accessControlAllowOrigins"]["items"] == ["*"]
    assert set(cors["accessControlAllowMethods"]["items"]) == {"GET", "HEAD", "OPTIONS"}
    assert cors["accessControlAllowHeaders"]["items"] == ["*"]
    assert cors["accessControlExposeHeaders"]["items"] == ["ETag", "Link", "X-Markdown-Tokens"]
    assert cors["accessControlAllowCredentials"] is False
    assert cors["originOverride"] is True, "one header on CORS requests, not S3's and ours"
    assert cors["accessControlMaxAgeSec"] > 0
    # CORS is the policy's, never a function's: the functions only rewrite Markdown URIs
    # and add the alternate Link and token estimate (tests/test_edge_function.py), and
    # every behaviour's policy has this CORS.
    functions = plain.mocks.of_type("aws:cloudfront/function:Function")
    assert sorted(
        f.name.rsplit("-", 2)[-2] + "-" + f.name.rsplit("-", 1)[-1] for f in functions
    ) == ["answer-links", "markdown-negotiation"]
    policies = {p.id: p.inputs for p in plain.mocks.of_type(
        "aws:cloudfront/responseHeadersPolicy:ResponseHeadersPolicy")}  # fmt: skip
    for behaviour in behaviours(plain):
        assert policies[behaviour["responseHeadersPolicyId"]]["corsConfig"] == cors


def test_s3_origin_always_gets_an_origin_header(plain: ProgramRun) -> None:
    """So S3's CORS rule answers requests without Origin too (curl, server-side agents)."""
    (origin,) = distribution(plain)["origins"]
    headers = {h["name"]: h["value"] for h in origin["customHeaders"]}
    assert headers["Origin"].startswith("https://")


def test_hsts_preload_is_opt_in(plain: ProgramRun, tmp_path: Path) -> None:
    hsts = _headers_policy(plain).inputs["securityHeadersConfig"]["strictTransportSecurity"]
    assert hsts["preload"] is False
    run = run_program(
        make_config(
            tmp_path, domain="agents.example.com", certificate_arn=CERTIFICATE, hsts_preload=True
        )
    )
    hsts = _headers_policy(run).inputs["securityHeadersConfig"]["strictTransportSecurity"]
    assert hsts["preload"] is True


def test_security_headers(plain: ProgramRun) -> None:
    security = _headers_policy(plain).inputs["securityHeadersConfig"]
    hsts = security["strictTransportSecurity"]
    assert hsts["accessControlMaxAgeSec"] >= 31536000 and hsts["override"] is True
    assert security["contentTypeOptions"]["override"] is True  # nosniff
    assert "default-src 'none'" in security["contentSecurityPolicy"]["contentSecurityPolicy"]
    assert security["referrerPolicy"]["referrerPolicy"] == "no-referrer"
    assert security["frameOptions"]["frameOption"] == "DENY"


def test_every_response_links_the_api_catalog(plain: ProgramRun) -> None:
    """RFC 9727 section 3: `Link: </.well-known/api-catalog>; rel="api-catalog"`, and
    llms.txt and the site's discovery document (issue 26), added by the response headers
    policy as one custom header (issue 14): the value the local edge sends."""
    items = _headers_policy(plain).inputs["customHeadersConfig"]["items"]
    assert items == [
        {
            "header": "Link",
            "value": '</.well-known/api-catalog>; rel="api-catalog", </llms.txt>; '
            'rel="llms-txt", </.well-known/service.json>; rel="describedby"; '
            'type="application/json"',
            "override": True,
        }
    ]


def test_the_links_name_the_sites_own_discovery_document(tmp_path: Path) -> None:
    """The discovery path carries the brand: another brand, another Link value."""
    config = make_config(tmp_path)
    text = (config.site_dir / "site.yaml").read_text()
    assert "brand: service" in text
    (config.site_dir / "site.yaml").write_text(text.replace("brand: service", "brand: parlance"))
    assert discovery_path(config.site_dir) == "/.well-known/parlance.json"


def test_markdown_negotiation_function(plain: ProgramRun) -> None:
    """Issue 14 and 26 on AWS: published cloudfront-js-2.0 functions whose code is the
    tested source with agent_contract's table written in, named after the stack."""
    functions = {
        f.inputs["name"]: f.inputs for f in plain.mocks.of_type("aws:cloudfront/function:Function")
    }
    assert set(functions) == {"agent-access-test-markdown", "agent-access-test-links"}
    for inputs in functions.values():
        assert inputs["runtime"] == "cloudfront-js-2.0"
        assert inputs["publish"] is True
        assert inputs["code"] == function_source()
        assert "__AGENT_CONTRACT__" not in inputs["code"]
        assert "function handler(event)" in inputs["code"]
        assert inputs["comment"]


def test_document_and_faq_json_behaviours_negotiate_markdown(plain: ProgramRun) -> None:
    inputs = distribution(plain)
    arn = "arn:aws:cloudfront::123456789012:function/agent-access-test-{}".format
    with_functions = {
        b["pathPattern"]: b
        for b in inputs["orderedCacheBehaviors"]
        if b.get("functionAssociations")
    }
    negotiated = {p: b for p, b in with_functions.items() if p.endswith(".json")}
    assert set(negotiated) == {"/api/v1/content/*.json", "/api/v1/faq/*.json"}
    twins = {p: b for p, b in with_functions.items() if p.endswith(".md")}
    assert set(twins) == {"/api/v1/content/*.md", "/api/v1/faq/*.md"}
    policies = {p.id: p.inputs for p in plain.mocks.of_type(
        "aws:cloudfront/responseHeadersPolicy:ResponseHeadersPolicy")}  # fmt: skip
    default = inputs["defaultCacheBehavior"]
    links = {"eventType": "viewer-response", "functionArn": arn("links")}
    for behaviour in twins.values():
        assert behaviour["functionAssociations"] == [links]
        assert behaviour["responseHeadersPolicyId"] == default["responseHeadersPolicyId"]
    for behaviour in negotiated.values():
        assert behaviour["functionAssociations"] == [
            {"eventType": "viewer-request", "functionArn": arn("markdown")},
            links,
        ]
        # The rewritten URI is the cache key: the files' cache policy, nothing added to it.
        assert behaviour["cachePolicyId"] == default["cachePolicyId"]
        assert behaviour["targetOriginId"] == default["targetOriginId"]
        assert behaviour["originRequestPolicyId"] == default["originRequestPolicyId"]
        policy = policies[behaviour["responseHeadersPolicyId"]]
        items = {i["header"]: i for i in policy["customHeadersConfig"]["items"]}
        assert items["Vary"] == {"header": "Vary", "value": "Accept", "override": True}
        assert "Link" in items, "the api-catalog link stays on negotiated answers"
        base = policies[default["responseHeadersPolicyId"]]
        assert policy["corsConfig"] == base["corsConfig"]
        assert policy["securityHeadersConfig"] == base["securityHeadersConfig"]
    # Every other behaviour runs no function and sends no Vary: Accept.
    for behaviour in behaviours(plain):
        if behaviour.get("pathPattern") not in with_functions:
            assert not behaviour.get("functionAssociations")
        if behaviour.get("pathPattern") not in negotiated:
            items = policies[behaviour["responseHeadersPolicyId"]]["customHeadersConfig"]["items"]
            assert "Vary" not in {i["header"] for i in items}


def test_distribution_basics(plain: ProgramRun) -> None:
    inputs = distribution(plain)
    assert inputs["enabled"] is True
    assert inputs["defaultRootObject"] == "llms.txt"
    assert inputs["httpVersion"] == "http2and3"
    assert inputs["isIpv6Enabled"] is True
    assert inputs["priceClass"] == "PriceClass_100"
    assert inputs["customErrorResponses"] == [
        {"errorCode": 404, "responseCode": 404, "responsePagePath": "/errors/404.json",
         "errorCachingMinTtl": 60}
    ]  # fmt: skip
    assert inputs["restrictions"]["geoRestriction"]["restrictionType"] == "none"


def test_no_domain_variant(plain: ProgramRun) -> None:
    inputs = distribution(plain)
    assert inputs["viewerCertificate"] == {"cloudfrontDefaultCertificate": True}
    assert not inputs.get("aliases")
    assert not inputs.get("webAclId") and not inputs.get("loggingConfig")
    assert plain.outputs["base_url"] == f"https://{DISTRIBUTION_DOMAIN}"
    assert not plain.mocks.of_type("aws:acm/certificate:Certificate")
    assert not plain.mocks.of_type("aws:route53/record:Record")


def test_custom_domain_variant(custom_domain: ProgramRun) -> None:
    inputs = distribution(custom_domain)
    assert inputs["aliases"] == ["agents.parlance.example"]
    certificate = inputs["viewerCertificate"]
    assert certificate["minimumProtocolVersion"] == "TLSv1.2_2021"
    assert certificate["sslSupportMethod"] == "sni-only"
    assert certificate["acmCertificateArn"].startswith("arn:aws:acm:us-east-1:")
    assert custom_domain.outputs["base_url"] == "https://agents.parlance.example"
    assert inputs["webAclId"].startswith("arn:aws:wafv2:")
    assert inputs["loggingConfig"]["bucket"] == "parlance-logs.s3.amazonaws.com"
    assert inputs["priceClass"] == "PriceClass_All"


def test_custom_domain_certificate_is_validated_in_us_east_1(custom_domain: ProgramRun) -> None:
    mocks = custom_domain.mocks
    certificate = mocks.one("aws:acm/certificate:Certificate")
    assert certificate.inputs["validationMethod"] == "DNS"
    providers = {p.name: p for p in mocks.of_type("pulumi:providers:aws")}
    us_east_1 = next(p for p in providers.values() if p.inputs.get("region") == "us-east-1")
    assert certificate.provider and certificate.provider.endswith(f"::{us_east_1.id}")
    validation = mocks.one("aws:acm/certificateValidation:CertificateValidation")
    assert validation.provider == certificate.provider
    records = {r.name: r.inputs for r in mocks.of_type("aws:route53/record:Record")}
    alias_types = sorted(r["type"] for r in records.values() if r.get("aliases"))
    assert alias_types == ["A", "AAAA"]
    for record in records.values():
        assert record["zoneId"] == "Z0123456789ABC"
        if record.get("aliases"):
            assert record["aliases"][0]["name"] == DISTRIBUTION_DOMAIN


def test_certificate_arn_variant_uses_it_without_creating_one(tmp_path: Path) -> None:
    run = run_program(
        make_config(tmp_path, domain="agents.example.com", certificate_arn=CERTIFICATE)
    )
    certificate = distribution(run)["viewerCertificate"]
    assert certificate["acmCertificateArn"] == CERTIFICATE
    assert certificate["minimumProtocolVersion"] == "TLSv1.2_2021"
    assert not run.mocks.of_type("aws:acm/certificate:Certificate")
    assert not run.mocks.of_type("aws:route53/record:Record"), "no zone given: no records"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"domain": "agents.example.com"}, "certificateArn or hostedZoneId"),
        ({"certificate_arn": CERTIFICATE}, "need a domain"),
        (
            {"domain": "a.example.com", "certificate_arn": "arn:aws:acm:eu-west-1:1:certificate/x"},
            "us-east-1",
        ),
        ({"price_class": "PriceClass_Cheap"}, "priceClass"),
        ({"noncurrent_version_days": 0}, "noncurrentVersionDays"),
        ({"web_acl_arn": "arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/a/1"}, "REGIONAL"),
        ({"web_acl_arn": "arn:aws:wafv2:eu-west-1:123456789012:global/webacl/a/1"}, "us-east-1"),
        ({"web_acl_arn": "0a1b2c3d-classic-waf-id"}, "scope CLOUDFRONT"),
        ({"hsts_preload": True}, "hstsPreload"),
    ],
)
def test_bad_stack_config_is_refused(tmp_path: Path, overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_config(tmp_path, **overrides)


def test_every_aws_resource_is_tagged_through_its_provider(
    plain: ProgramRun, custom_domain: ProgramRun
) -> None:
    for run in (plain, custom_domain):
        providers = {p.id: p for p in run.mocks.of_type("pulumi:providers:aws")}
        assert providers
        for provider in providers.values():
            # Provider inputs travel JSON-encoded.
            assert json.loads(provider.inputs["defaultTags"])["tags"] == TAGS
        aws_resources = [r for r in run.mocks.resources if r.typ.startswith("aws:")]
        assert len(aws_resources) >= 12
        for resource in aws_resources:
            assert resource.provider, resource.name
            assert resource.provider.rsplit("::", 1)[-1] in providers, resource.name


# --- the content -------------------------------------------------------------------------


def test_site_content_gets_the_manifest_of_a_frozen_build(
    plain: ProgramRun, tmp_path: Path
) -> None:
    content = site_content(plain)
    files = decode_input(content.inputs["files"])
    dist = Path(content.inputs["source_dir"])
    manifest = json.loads((dist / "manifest.json").read_text())
    assert manifest["base_url"] == f"https://{DISTRIBUTION_DOMAIN}"
    assert files == manifest["files"]
    assert content.inputs["bucket"] == plain.outputs["bucket_name"]
    assert content.inputs["distribution_id"] == plain.outputs["distribution_id"]
    assert content.inputs["region"] == REGION
    assert decode_input(plain.outputs["files"]) == files


def test_stack_outputs_stay_small_at_any_size(plain: ProgramRun, tmp_path: Path) -> None:
    """Exports carry counts and a digest, never the per-file map: at 10,000 files that map
    is ~2 MB, over GitHub's 1 MB step-output limit."""
    source = (REPO / "infra" / "__main__.py").read_text()
    exported = set(re.findall(r'pulumi\.export\("(\w+)"', source))
    assert exported == {"base_url", "distribution_id", "bucket_name", "file_count",
                        "files_digest", "last_publish", "invalidation_id"}  # fmt: skip
    from infra import publisher

    big = {
        f"/api/v1/content/d{i:05}.json": "a" * 64 + " 1 application/json|x" for i in range(10_000)
    }
    assert len(build_manifest.files_digest(big)) == 64
    assert build_manifest.files_digest(big) != build_manifest.files_digest({**big, "/x": "y"})
    last = {"uploaded": list(big), "deleted": [], "invalidated": ["/*"], "invalidation_id": "I1"}
    summary = publisher.publish_summary(last)
    assert summary == {"uploaded": 10_000, "deleted": 0, "invalidated": 1, "invalidation_id": "I1"}
    assert len(json.dumps(summary)) < 200


def test_every_file_has_its_media_type_and_cache_control(plain: ProgramRun) -> None:
    files = decode_input(site_content(plain).inputs["files"])
    # The spec's 23 files, a Markdown mirror per entry (12), 4 more doors and llms.txt's
    # two parts (issue 14), the Agent Skill and its index, at both discovery RFC versions'
    # locations (issue 26).
    search = [path for path in files if path.startswith("/api/v1/search/")]
    assert "/api/v1/search/terms.json" in search and len(search) >= 3  # issue 25
    assert len(files) - len(search) == 23 + 12 + 4 + 2 + 4
    media = {".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
    media[".xml"] = "application/xml"
    for path, entry in files.items():
        expected = media.get(path[path.rfind(".") :], "application/json")
        if path == "/.well-known/api-catalog":
            expected = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
        assert entry["media_type"] == expected, path
        control = entry["cache_control"]
        assert control.startswith("public, max-age="), path
        if path.startswith("/errors/"):
            assert "s-maxage=60" in control
        elif path.startswith("/api/v1/search/shards/"):  # named by their bytes (issue 25)
            assert control.endswith("max-age=31536000, s-maxage=31536000, immutable"), path
        elif (
            path.startswith(("/api/v1/content/", "/api/v1/faq/")) and "index" not in path
        ) or path in ("/api/v1/architecture.json", "/api/v1/on-site-agent.json"):
            assert "max-age=3600" in control, path  # documents change rarely
        else:
            assert "max-age=300" in control, path  # aggregates change with any document


def test_preview_lists_files_one_by_one(plain: ProgramRun) -> None:
    """The manifest is the resource's input, so `pulumi preview --diff` shows each file:
    the input is one string holding a JSON object (path -> one line per file), which the
    CLI decodes on both sides of a diff and shows as an object diff, key by key
    (pkg/backend/display/object_diff.go, printTextDiff -> printEncodedValueDiff; only a
    whole-string JSON object or array qualifies; docs/decisions.md)."""
    files = site_content(plain).inputs["files"]
    assert isinstance(files, str)  # one value for the SDK to serialize, at any size
    decoded = json.loads(files)
    assert isinstance(decoded, dict) and list(decoded) == sorted(decoded)
    # A changed file shows as one changed key, with its new hash, size, type and headers.
    entry = decoded["/api/v1/faq/q03-protection.json"]
    sha256, size, rest = entry.split(" ", 2)
    assert len(sha256) == 64 and int(size) > 0
    assert rest.startswith("application/json|public, max-age=")
    assert all(isinstance(value, str) for value in decoded.values())
    # One file per line, so a line-based view of the state (a `pulumi stack export`
    # diff) reads file by file too.
    lines = files.splitlines()
    assert len(lines) == len(decoded)
    assert all(json.loads("{" + line.rstrip(",").strip("{}") + "}") for line in lines)


def test_stale_lock_fails_the_program(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    faq = config.site_dir / "faq" / "q01-difference.yaml"
    faq.write_text(faq.read_text().replace("sitemap", "site map"))
    with pytest.raises(SiteDataError, match=r"content\.lock\.json"):
        run_program(config)


def test_provider_loads_in_a_fresh_process_as_the_engine_loads_it(plain: ProgramRun) -> None:
    """The engine deserializes the provider in another process: it must come back from
    the base64 dill payload alone, by importing infra.site_content, nothing captured."""
    payload = site_content(plain).inputs["__provider"]
    script = (
        "import base64, sys, dill; "
        "provider = dill.loads(base64.b64decode(sys.stdin.read())); "
        "print(type(provider).__module__, type(provider).__name__, "
        "callable(provider.create), callable(provider.diff))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, text=True,
        cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split() == ["infra.site_content", "SiteContentProvider", "True", "True"]
    assert len(payload) < 20_000, "the provider captures no live objects or data"


def test_preview_of_a_new_stack_has_an_unknown_manifest_and_diff_copes(tmp_path: Path) -> None:
    """In a preview of a new stack the distribution's domain, hence the manifest, is
    unknown; the provider's diff must answer "changes" instead of crashing."""
    from pulumi.runtime import rpc

    run = run_program(make_config(tmp_path), preview=True)
    content = site_content(run)
    provider = provider_of(content)
    olds = {k: v for k, v in content.inputs.items() if k != "__provider"}
    assert provider.diff("id", olds, {**olds, "files": rpc.UNKNOWN}).changes is True
    assert provider.diff("id", olds, {**olds, "bucket": rpc.UNKNOWN}).changes is True


def _run_main_under_mocks(
    tmp_path: Path, config: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The Pulumi program's __main__ in a fresh process, under mocks, with stack `config`."""
    return subprocess.run(
        [sys.executable, "-m", "tests.run_main_under_mocks", str(tmp_path), json.dumps(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_main_program_reads_stack_config_and_exports(tmp_path: Path) -> None:
    shutil.copytree(SITE_DATA, tmp_path / "site_data")
    config = {"aws:region": REGION, "agent-access:priceClass": "PriceClass_200"}
    completed = _run_main_under_mocks(tmp_path, config)
    assert completed.returncode == 0, completed.stderr[-3000:]
    resources = json.loads(completed.stdout)
    (cdn,) = [r for r in resources if r["typ"] == "aws:cloudfront/distribution:Distribution"]
    assert cdn["inputs"]["priceClass"] == "PriceClass_200"
    assert cdn["inputs"]["defaultRootObject"] == "llms.txt"
    providers = [r for r in resources if r["typ"] == "pulumi:providers:aws"]
    assert {p["inputs"]["region"] for p in providers} == {REGION, "us-east-1"}
    assert {json.loads(p["inputs"]["defaultTags"])["tags"]["stack"] for p in providers} == {"dev"}
    assert (tmp_path / "dist" / "manifest.json").is_file()
    assert not (REPO / "dist").exists() or tmp_path / "dist" != (REPO / "dist")


def test_pulumi_project_declares_every_option_the_program_reads() -> None:
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    assert project["main"] == "infra/"
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    source = (REPO / "infra" / "config.py").read_text()
    read = set(re.findall(r"config\.(?:get|require|get_int|get_bool)\(\"(\w+)\"\)", source))
    assert read == set(project["config"]), "Pulumi.yaml documents exactly what load() reads"
    example = (REPO / "Pulumi.dev.yaml").read_text()
    assert "aws:region" in yaml.safe_load(example)["config"]
    for option in read:
        assert f"agent-access:{option}" in example, f"Pulumi.dev.yaml documents {option}"


def test_no_output_is_made_per_published_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preview benchmark measures the program, not the harness, and the program's
    own cost does not grow with the site: neither lifts the per-file `files` into one
    Output per file (Output.all on a dict does, ~4 per file), and the SDK serializes the
    `files` input as one value, not one per file (a map cost ~2 `serialize_property`
    calls per file, most of the program's growth from N = 100 to 10,000)."""
    import pulumi
    from pulumi.runtime import rpc

    import infra.program as program

    def fake_files(count: int) -> dict[str, dict[str, object]]:
        return {
            f"/api/v1/faq/q{i:05d}.json": {
                "sha256": f"{i:064x}",
                "size": 100 + i,
                "media_type": "application/json",
                "cache_control": "public, max-age=3600",
            }
            for i in range(count)
        }

    original = pulumi.Output.from_input
    original_serialize = rpc.serialize_property
    calls: list[str] = []

    def counting(value: object) -> object:
        calls.append("from_input")
        return original(value)

    async def counting_serialize(*args: object, **kwargs: object) -> object:
        calls.append("serialize")
        return await original_serialize(*args, **kwargs)  # type: ignore[arg-type]

    counted: dict[int, dict[str, int]] = {}
    for count in (20, 2000):
        files = fake_files(count)
        monkeypatch.setattr(program, "build_files", lambda _config, _url, f=files: f)
        monkeypatch.setattr(pulumi.Output, "from_input", staticmethod(counting))
        monkeypatch.setattr(rpc, "serialize_property", counting_serialize)
        calls.clear()
        run = run_program(make_config(tmp_path / str(count)), preview=True)
        monkeypatch.setattr(pulumi.Output, "from_input", staticmethod(original))
        monkeypatch.setattr(rpc, "serialize_property", original_serialize)
        assert decode_input(run.outputs["files"]) == files
        assert run.outputs["file_count"] == count
        counted[count] = {kind: calls.count(kind) for kind in ("from_input", "serialize")}
    assert counted[2000]["from_input"] - counted[20]["from_input"] < 100, counted
    assert counted[2000]["serialize"] - counted[20]["serialize"] < 100, counted


# --- siteDir: the site a team keeps beside this project (issue 23) ------------------------


def test_site_dir_is_relative_to_the_project_folder(tmp_path: Path) -> None:
    from infra.config import resolve_site_dir

    project = tmp_path / "agent-access"
    project.mkdir()
    shutil.copytree(SITE_DATA, tmp_path / "docs-site")
    assert resolve_site_dir("../docs-site", project) == (tmp_path / "docs-site").resolve()
    assert resolve_site_dir(str(tmp_path / "docs-site"), project) == tmp_path / "docs-site"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("../missing-site", "which is not a folder"),
        ("../not-a-site", "which has no site.yaml"),
        ("  ", "expected a folder"),
    ],
)
def test_a_bad_site_dir_is_refused_with_what_it_resolved_to(
    tmp_path: Path, value: str, message: str
) -> None:
    from infra.config import resolve_site_dir

    project = tmp_path / "agent-access"
    project.mkdir()
    (tmp_path / "not-a-site").mkdir()
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        resolve_site_dir(value, project)
    assert str(refused.value).startswith("siteDir: ")
    if value.strip():
        assert str((project / value).resolve()) in str(refused.value)


def test_main_program_publishes_the_site_the_stack_names(tmp_path: Path) -> None:
    """`pulumi config set siteDir ../docs-site`: the program builds that site, not
    site_data/ (the harness's default here)."""
    shutil.copytree(SITE_DATA, tmp_path / "site_data")
    other = tmp_path / "docs-site"
    shutil.copytree(SITE_DATA, other)
    sites.rename_brand(other, "docs-team")
    assert run_cli("build", "--site", other, "--out", tmp_path / "scratch").code == 0  # its lock
    config = {"aws:region": REGION, "agent-access:siteDir": str(other)}
    completed = _run_main_under_mocks(tmp_path, config)
    assert completed.returncode == 0, completed.stderr[-3000:]
    published = json.loads((tmp_path / "dist" / "manifest.json").read_text())["files"]
    assert "/.well-known/docs-team.json" in published
    assert "/.well-known/service.json" not in published


def test_main_program_refuses_a_site_dir_that_is_not_a_site(tmp_path: Path) -> None:
    config = {"aws:region": REGION, "agent-access:siteDir": str(tmp_path / "nowhere")}
    completed = _run_main_under_mocks(tmp_path, config)
    assert completed.returncode != 0
    assert "siteDir: " in completed.stderr and "which is not a folder" in completed.stderr
