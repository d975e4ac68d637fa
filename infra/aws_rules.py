"""AWS's own rules, checked on the resource inputs the program declares, before AWS sees them.

Pulumi mocks and moto accept any input; CloudFront, S3, ACM and WAF do not. Each rule
below is a pure function over the declared resources (the inputs as the engine receives
them: camelCase keys, nested args as dicts) and returns the violations it finds, each
naming the resource and the field. The source of every rule is in a comment next to it:
an AWS documentation page, or a public issue where real deploys hit the error. Tests run
the whole set over every resource of both variants (no domain; custom domain) and feed
each rule an input that breaks it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

DISTRIBUTION = "aws:cloudfront/distribution:Distribution"
CACHE_POLICY = "aws:cloudfront/cachePolicy:CachePolicy"
FUNCTION = "aws:cloudfront/function:Function"
HEADERS_POLICY = "aws:cloudfront/responseHeadersPolicy:ResponseHeadersPolicy"
BUCKET_CORS = "aws:s3/bucketCorsConfiguration:BucketCorsConfiguration"
BUCKET_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)
CERTIFICATE = "aws:acm/certificate:Certificate"
AWS_PROVIDER = "pulumi:providers:aws"


class Declared(Protocol):
    """One declared resource: what tests/pulumi_harness.py records under mocks."""

    typ: str
    name: str
    inputs: Mapping[str, Any]
    provider: str | None


@dataclass(frozen=True)
class Violation:
    rule: str
    resource: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.resource}: {self.message}"


Rule = Callable[[Sequence[Declared]], list[Violation]]


def _of(resources: Iterable[Declared], typ: str) -> list[Declared]:
    return [r for r in resources if r.typ == typ]


def _behaviours(distribution: Declared) -> list[tuple[str, Mapping[str, Any]]]:
    inputs = distribution.inputs
    found = [("defaultCacheBehavior", inputs.get("defaultCacheBehavior") or {})]
    for index, behaviour in enumerate(inputs.get("orderedCacheBehaviors") or []):
        found.append((f"orderedCacheBehaviors[{index}]", behaviour))
    return found


# --- response headers policy ---------------------------------------------------------------

# The API refuses CORS and security header names in a response headers policy's custom
# headers; AWS's reference pages do not list the restriction, the API enforces it with
# "<name> is a CORS header and cannot be set as custom header" / "The parameter
# CustomHeaders contains Content-Security-Policy that is a security header and cannot be
# set as custom header" (quoted from real deploys in this project's issue 9). The headers
# the policy's CORS and security sections own, per the API reference:
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ResponseHeadersPolicyCorsConfig.html
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ResponseHeadersPolicySecurityHeadersConfig.html
POLICY_OWNED_HEADERS = frozenset(
    name.lower()
    for name in (
        "Access-Control-Allow-Credentials",
        "Access-Control-Allow-Headers",
        "Access-Control-Allow-Methods",
        "Access-Control-Allow-Origin",
        "Access-Control-Expose-Headers",
        "Access-Control-Max-Age",
        "Content-Security-Policy",
        "Strict-Transport-Security",
        "X-Content-Type-Options",
        "X-Frame-Options",
        "X-XSS-Protection",
        "Referrer-Policy",
    )
)


def response_policy_custom_header_names(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for policy in _of(resources, HEADERS_POLICY):
        items = (policy.inputs.get("customHeadersConfig") or {}).get("items") or []
        for item in items:
            name = str(item.get("header", ""))
            if name.lower() in POLICY_OWNED_HEADERS or name.lower().startswith("access-control-"):
                found.append(
                    Violation(
                        "response-policy-custom-header",
                        policy.name,
                        f"customHeadersConfig.items: {name} is a CORS or security header; "
                        "CloudFront refuses it there (use corsConfig / securityHeadersConfig)",
                    )
                )
    return found


# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ResponseHeadersPolicyCorsConfig.html
# and https://github.com/awsdocs/aws-cloudformation-user-guide/issues/1179 (an empty
# AccessControlAllowHeaders list is refused). The Fetch standard forbids credentials
# with a `*` origin, and CloudFront refuses the combination.
CORS_METHODS = frozenset({"GET", "DELETE", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "ALL"})


def response_policy_cors(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for policy in _of(resources, HEADERS_POLICY):
        cors = policy.inputs.get("corsConfig")
        if not cors:
            continue

        def items(field: str, cors: Mapping[str, Any] = cors) -> list[str]:
            return list((cors.get(field) or {}).get("items") or [])

        for field in (
            "accessControlAllowHeaders",
            "accessControlAllowMethods",
            "accessControlAllowOrigins",
        ):
            if not items(field):
                found.append(
                    Violation("response-policy-cors", policy.name, f"corsConfig.{field} is empty")
                )
        bad = set(items("accessControlAllowMethods")) - CORS_METHODS
        if bad:
            found.append(
                Violation(
                    "response-policy-cors",
                    policy.name,
                    f"corsConfig.accessControlAllowMethods: {sorted(bad)} not CloudFront methods",
                )
            )
        if cors.get("accessControlAllowCredentials") and "*" in items("accessControlAllowOrigins"):
            found.append(
                Violation(
                    "response-policy-cors",
                    policy.name,
                    "corsConfig: credentials with origin '*' are refused",
                )
            )
        if "originOverride" not in cors:
            found.append(
                Violation(
                    "response-policy-cors", policy.name, "corsConfig.originOverride is required"
                )
            )
    return found


# --- origins --------------------------------------------------------------------------------

# "Custom headers that CloudFront can't add to origin requests":
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/add-origin-custom-headers.html#add-origin-custom-headers-denylist
# (`Origin` is not on it: the same page's use cases say "you can configure CloudFront to
# always add the Origin header to requests that it sends to your origin".)
ORIGIN_HEADER_DENYLIST = frozenset(
    name.lower()
    for name in (
        "Cache-Control", "Connection", "Content-Length", "Cookie", "Host", "If-Match",
        "If-Modified-Since", "If-None-Match", "If-Range", "If-Unmodified-Since",
        "Max-Forwards", "Pragma", "Proxy-Authorization", "Proxy-Connection", "Range",
        "Request-Range", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Via", "X-Real-Ip",
    )
)  # fmt: skip
ORIGIN_HEADER_DENIED_PREFIXES = ("x-amz-", "x-edge-")
# Quotas on headers: 10 custom headers per origin, names up to 256 characters, values up
# to 1,783: https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html#limits-custom-headers
ORIGIN_CUSTOM_HEADERS_MAX = 10
ORIGIN_HEADER_NAME_MAX = 256
ORIGIN_HEADER_VALUE_MAX = 1783


def origin_custom_headers(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        for index, origin in enumerate(distribution.inputs.get("origins") or []):
            headers = origin.get("customHeaders") or []
            where = f"origins[{index}].customHeaders"
            if len(headers) > ORIGIN_CUSTOM_HEADERS_MAX:
                found.append(
                    Violation(
                        "origin-custom-header",
                        distribution.name,
                        f"{where}: {len(headers)} headers, CloudFront allows "
                        f"{ORIGIN_CUSTOM_HEADERS_MAX}",
                    )
                )
            for header in headers:
                name, value = str(header.get("name", "")), str(header.get("value", ""))
                lowered = name.lower()
                if lowered in ORIGIN_HEADER_DENYLIST or lowered.startswith(
                    ORIGIN_HEADER_DENIED_PREFIXES
                ):
                    found.append(
                        Violation(
                            "origin-custom-header",
                            distribution.name,
                            f"{where}: CloudFront cannot add {name} to origin requests",
                        )
                    )
                if not name or len(name) > ORIGIN_HEADER_NAME_MAX:
                    found.append(
                        Violation(
                            "origin-custom-header", distribution.name, f"{where}: name {name!r}"
                        )
                    )
                if not value or len(value) > ORIGIN_HEADER_VALUE_MAX:
                    found.append(
                        Violation(
                            "origin-custom-header",
                            distribution.name,
                            f"{where}: {name} needs a value of 1-{ORIGIN_HEADER_VALUE_MAX} chars",
                        )
                    )
    return found


# An origin signed with OAC (type s3) must be the bucket's REST endpoint, not its website
# endpoint, and no custom origin: "InvalidArgument: The parameter Origin DomainName does
# not refer to a valid S3 bucket" (https://github.com/pulumi/examples/pull/1296,
# https://github.com/hashicorp/terraform-provider-aws/issues/33214), and a custom origin
# with an s3 OAC never deploys (https://github.com/hashicorp/terraform-provider-aws/issues/26850).
_S3_REST_DOMAIN = re.compile(r"[a-z0-9][a-z0-9.-]*\.s3(\.[a-z0-9-]+)?\.amazonaws\.com")


def oac_origins(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        for index, origin in enumerate(distribution.inputs.get("origins") or []):
            if not origin.get("originAccessControlId"):
                continue
            domain = str(origin.get("domainName", ""))
            if not _S3_REST_DOMAIN.fullmatch(domain) or origin.get("customOriginConfig"):
                found.append(
                    Violation(
                        "oac-origin",
                        distribution.name,
                        f"origins[{index}]: OAC needs the bucket's REST endpoint "
                        f"(bucket_regional_domain_name), not {domain!r} or a custom origin",
                    )
                )
    return found


# --- cache policies and behaviours ---------------------------------------------------------


# MinTTL <= DefaultTTL <= MaxTTL, and with MaxTTL 0 (caching disabled) nothing may be
# added to the cache key, compression flags included:
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CachePolicyConfig.html
# https://github.com/aws-cloudformation/cloudformation-coverage-roadmap/issues/571
def cache_policy_ttls(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for policy in _of(resources, CACHE_POLICY):
        low = policy.inputs.get("minTtl", 0)
        default = policy.inputs.get("defaultTtl", 86400)
        high = policy.inputs.get("maxTtl", 31536000)
        if not (0 <= low <= default <= high):
            found.append(
                Violation(
                    "cache-policy-ttl",
                    policy.name,
                    f"minTtl {low} <= defaultTtl {default} <= maxTtl {high} does not hold",
                )
            )
        parameters = policy.inputs.get("parametersInCacheKeyAndForwardedToOrigin") or {}
        if high == 0 and (
            parameters.get("enableAcceptEncodingGzip")
            or parameters.get("enableAcceptEncodingBrotli")
        ):
            found.append(
                Violation(
                    "cache-policy-ttl",
                    policy.name,
                    "maxTtl 0 disables caching: Accept-Encoding cannot be in the cache key",
                )
            )
    return found


# AllowedMethods is one of three sets, CachedMethods one of two and within AllowedMethods:
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_AllowedMethods.html
ALLOWED_METHOD_SETS = (
    frozenset({"GET", "HEAD"}),
    frozenset({"GET", "HEAD", "OPTIONS"}),
    frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}),
)
CACHED_METHOD_SETS = (frozenset({"GET", "HEAD"}), frozenset({"GET", "HEAD", "OPTIONS"}))


def behaviour_methods(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        for where, behaviour in _behaviours(distribution):
            allowed = frozenset(behaviour.get("allowedMethods") or [])
            cached = frozenset(behaviour.get("cachedMethods") or [])
            if allowed not in ALLOWED_METHOD_SETS:
                found.append(
                    Violation(
                        "behaviour-methods",
                        distribution.name,
                        f"{where}.allowedMethods {sorted(allowed)} is not a set CloudFront offers",
                    )
                )
            if cached not in CACHED_METHOD_SETS or not cached <= allowed:
                found.append(
                    Violation(
                        "behaviour-methods",
                        distribution.name,
                        f"{where}.cachedMethods {sorted(cached)} must be GET+HEAD(+OPTIONS) "
                        "and within allowedMethods",
                    )
                )
    return found


# Distributions allow 75 cache behaviours by default ("Cache behaviors per distribution:
# 75" on the quotas page as of late 2026; it read 25 in older versions):
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html
CACHE_BEHAVIOURS_MAX = 75
# The default root object is an object name with no leading `/`; a custom error page
# path starts with `/`:
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/DefaultRootObject.html
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CustomErrorResponse.html


def distribution_shape(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        inputs = distribution.inputs
        if len(_behaviours(distribution)) > CACHE_BEHAVIOURS_MAX:
            found.append(
                Violation(
                    "distribution-shape",
                    distribution.name,
                    f"more than {CACHE_BEHAVIOURS_MAX} cache behaviours",
                )
            )
        root = inputs.get("defaultRootObject")
        if root is not None and (root.startswith("/") or not root):
            found.append(
                Violation(
                    "distribution-shape",
                    distribution.name,
                    f"defaultRootObject {root!r}: an object name without a leading '/'",
                )
            )
        for response in inputs.get("customErrorResponses") or []:
            page = response.get("responsePagePath")
            if page is not None and not page.startswith("/"):
                found.append(
                    Violation(
                        "distribution-shape",
                        distribution.name,
                        f"customErrorResponses.responsePagePath {page!r} must start with '/'",
                    )
                )
        for where, behaviour in _behaviours(distribution)[1:]:
            pattern = behaviour.get("pathPattern") or ""
            if not pattern:
                found.append(
                    Violation("distribution-shape", distribution.name, f"{where}: no pathPattern")
                )
    return found


# --- CloudFront Functions ----------------------------------------------------------------

# Name: 1 to 64 of [A-Za-z0-9_-] (CreateFunction's Name; pulumi-aws: "Valid names contain
# only alphanumeric characters, hyphens, and underscores, and must be between 1 and 64
# characters"): https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CreateFunction.html
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# FunctionConfig.Runtime: cloudfront-js-1.0 | cloudfront-js-2.0
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_FunctionConfig.html
FUNCTION_RUNTIMES = frozenset({"cloudfront-js-1.0", "cloudfront-js-2.0"})
# "Maximum size of a function: 10 KB" (Quotas on CloudFront Functions; refused with
# FunctionSizeLimitExceeded): https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html#limits-functions
FUNCTION_CODE_MAX_BYTES = 10 * 1024
# CloudFront Functions run on viewer events only; one function per event type and
# behaviour; "your functions must be published to the LIVE stage to associate them with
# a cache behavior":
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_FunctionAssociation.html
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_FunctionAssociations.html
FUNCTION_EVENT_TYPES = frozenset({"viewer-request", "viewer-response"})


def cloudfront_functions(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    published: set[str] = set()
    for function in _of(resources, FUNCTION):
        inputs = function.inputs
        name = str(inputs.get("name", ""))
        if not FUNCTION_NAME.fullmatch(name):
            found.append(
                Violation(
                    "cloudfront-function",
                    function.name,
                    f"name {name!r}: 1 to 64 letters, digits, '-' or '_'",
                )
            )
        runtime = inputs.get("runtime")
        if runtime not in FUNCTION_RUNTIMES:
            found.append(
                Violation(
                    "cloudfront-function",
                    function.name,
                    f"runtime {runtime!r}: one of {sorted(FUNCTION_RUNTIMES)}",
                )
            )
        size = len(str(inputs.get("code", "")).encode("utf-8"))
        if size > FUNCTION_CODE_MAX_BYTES:
            found.append(
                Violation(
                    "cloudfront-function",
                    function.name,
                    f"code is {size} bytes; CloudFront takes at most {FUNCTION_CODE_MAX_BYTES}",
                )
            )
        # pulumi-aws publishes unless told not to (`publish` defaults to true).
        if inputs.get("publish", True) is not False:
            published.add(name)
    for distribution in _of(resources, DISTRIBUTION):
        for where, behaviour in _behaviours(distribution):
            associations = behaviour.get("functionAssociations") or []
            events = [str(a.get("eventType", "")) for a in associations]
            for event in events:
                if event not in FUNCTION_EVENT_TYPES:
                    found.append(
                        Violation(
                            "cloudfront-function",
                            distribution.name,
                            f"{where}.functionAssociations: {event!r} is not a viewer event",
                        )
                    )
            if len(events) != len(set(events)):
                found.append(
                    Violation(
                        "cloudfront-function",
                        distribution.name,
                        f"{where}.functionAssociations: two functions on one event type",
                    )
                )
            for association in associations:
                arn = str(association.get("functionArn", ""))
                if arn.rsplit("/", 1)[-1] not in published:
                    found.append(
                        Violation(
                            "cloudfront-function",
                            distribution.name,
                            f"{where}.functionAssociations: {arn} is not a published "
                            "function of this program (only LIVE functions can be associated)",
                        )
                    )
    return found


# --- S3 CORS ---------------------------------------------------------------------------------

# AllowedMethod is GET, PUT, HEAD, POST or DELETE (no OPTIONS: S3 answers preflights
# itself from the rules): https://docs.aws.amazon.com/AmazonS3/latest/API/API_CORSRule.html
S3_CORS_METHODS = frozenset({"GET", "PUT", "HEAD", "POST", "DELETE"})


def s3_cors_rules(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for cors in _of(resources, BUCKET_CORS):
        for index, rule in enumerate(cors.inputs.get("corsRules") or []):
            methods = set(rule.get("allowedMethods") or [])
            if not methods or methods - S3_CORS_METHODS:
                found.append(
                    Violation(
                        "s3-cors",
                        cors.name,
                        f"corsRules[{index}].allowedMethods {sorted(methods)}: S3 accepts "
                        f"{', '.join(sorted(S3_CORS_METHODS))}",
                    )
                )
            if not rule.get("allowedOrigins"):
                found.append(Violation("s3-cors", cors.name, f"corsRules[{index}]: no origins"))
    return found


# The publisher repairs drift by comparing each object's ETag, from one listing, with the
# MD5 of the built file (infra/publisher.py, Publisher.drifted; issue 24). "Objects created
# by the PUT Object, POST Object, or Copy operation, or through the AWS Management Console,
# and are encrypted by SSE-S3 or plaintext, have ETags that are an MD5 digest of their
# object data"; with SSE-C or SSE-KMS they do not:
# https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html (ETag). A KMS default
# would not fail a deploy: every publish would upload every file again, silently. So the
# bucket's default encryption stays SSE-S3 (AES256) unless the publisher changes with it.
ETAG_IS_MD5_ALGORITHMS = frozenset({"AES256"})


def bucket_encryption_keeps_etag_md5(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for config in _of(resources, BUCKET_ENCRYPTION):
        for index, rule in enumerate(config.inputs.get("rules") or []):
            default = rule.get("applyServerSideEncryptionByDefault") or {}
            algorithm = default.get("sseAlgorithm")
            if algorithm not in ETAG_IS_MD5_ALGORITHMS:
                found.append(
                    Violation(
                        "etag-is-md5",
                        config.name,
                        f"rules[{index}].applyServerSideEncryptionByDefault.sseAlgorithm "
                        f"{algorithm!r}: only SSE-S3 (AES256) keeps an object's ETag the MD5 "
                        "of its bytes, which the publisher's drift check compares",
                    )
                )
    return found


# --- certificates, TLS, WAF --------------------------------------------------------------------

# "To use an ACM certificate with CloudFront, make sure you request (or import) the
# certificate in the US East (N. Virginia) Region (us-east-1)":
# https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html
ACM_REGION = "us-east-1"


def _provider_regions(resources: Sequence[Declared]) -> dict[str, str]:
    return {p.name: str(p.inputs.get("region", "")) for p in _of(resources, AWS_PROVIDER)}


def acm_certificate_region(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    regions = _provider_regions(resources)
    for certificate in _of(resources, CERTIFICATE):
        region = regions.get(_provider_name(certificate.provider or ""), "")
        if region != ACM_REGION:
            found.append(
                Violation(
                    "acm-region",
                    certificate.name,
                    f"created in {region or 'the default region'}; CloudFront needs us-east-1",
                )
            )
    for distribution in _of(resources, DISTRIBUTION):
        arn = (distribution.inputs.get("viewerCertificate") or {}).get("acmCertificateArn")
        if arn and not str(arn).startswith(f"arn:aws:acm:{ACM_REGION}:"):
            found.append(
                Violation(
                    "acm-region",
                    distribution.name,
                    f"viewerCertificate.acmCertificateArn {arn} is not in us-east-1",
                )
            )
    return found


def _provider_name(reference: str) -> str:
    """`urn:pulumi:stack::project::pulumi:providers:aws::NAME::ID` -> NAME."""
    parts = reference.split("::")
    return parts[-2] if len(parts) >= 2 else reference


# With the default *.cloudfront.net certificate the minimum protocol is TLSv1 (any other
# value is refused); with an ACM certificate and SNI the supported policies are listed:
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ViewerCertificate.html
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/secure-connections-supported-viewer-protocols-ciphers.html
# Real deploys: a bare "TLSv1.2" is refused ("failed to satisfy constraint: Member must
# satisfy enum value set", https://github.com/hashicorp/terraform-provider-aws/issues/11193,
# https://github.com/hashicorp/terraform-provider-aws/pull/44382); an ACM certificate needs
# SslSupportMethod and MinimumProtocolVersion (https://github.com/aws/aws-cdk/pull/9200);
# the default certificate is TLSv1 whatever is asked (https://github.com/cdklabs/cdk-nag/issues/1101).
SNI_PROTOCOL_VERSIONS = frozenset(
    {"TLSv1", "TLSv1_2016", "TLSv1.1_2016", "TLSv1.2_2018", "TLSv1.2_2019", "TLSv1.2_2021",
     "TLSv1.2_2025", "TLSv1.3_2025"}
)  # fmt: skip


def viewer_certificate_tls(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        certificate = distribution.inputs.get("viewerCertificate") or {}
        minimum = certificate.get("minimumProtocolVersion")
        if certificate.get("cloudfrontDefaultCertificate"):
            if certificate.get("acmCertificateArn") or minimum not in (None, "TLSv1"):
                found.append(
                    Violation(
                        "viewer-tls",
                        distribution.name,
                        "the default certificate takes no ACM certificate and only TLSv1 "
                        f"as minimum protocol (got {minimum!r})",
                    )
                )
        elif certificate.get("acmCertificateArn"):
            if certificate.get("sslSupportMethod") not in ("sni-only", "vip", "static-ip"):
                found.append(
                    Violation(
                        "viewer-tls", distribution.name, "an ACM certificate needs sslSupportMethod"
                    )
                )
            if minimum not in SNI_PROTOCOL_VERSIONS:
                found.append(
                    Violation(
                        "viewer-tls",
                        distribution.name,
                        f"minimumProtocolVersion {minimum!r} unknown",
                    )
                )
            if not distribution.inputs.get("aliases"):
                found.append(
                    Violation(
                        "viewer-tls",
                        distribution.name,
                        "an ACM certificate without aliases serves nothing",
                    )
                )
        else:
            found.append(
                Violation("viewer-tls", distribution.name, "viewerCertificate names no certificate")
            )
    return found


# A WAFv2 web ACL for CloudFront has scope CLOUDFRONT, lives in us-east-1 and is given by
# its ARN ("arn:aws:wafv2:us-east-1:123456789012:global/webacl/ExampleWebACL/<id>"):
# https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_DistributionConfig.html (WebACLId)
# https://docs.aws.amazon.com/waf/latest/developerguide/how-aws-waf-works-resources.html
WEB_ACL_ARN = re.compile(
    r"arn:aws:wafv2:us-east-1:\d{12}:global/webacl/[A-Za-z0-9_-]{1,128}/[0-9a-f-]{1,64}"
)


def web_acl_problem(arn: str) -> str | None:
    """Why `arn` cannot be a CloudFront distribution's web ACL, or None."""
    if WEB_ACL_ARN.fullmatch(arn):
        return None
    if arn.startswith("arn:aws:wafv2:") and ":regional/" in arn:
        return "a REGIONAL web ACL; CloudFront needs one with scope CLOUDFRONT (global)"
    if arn.startswith("arn:aws:wafv2:") and not arn.startswith("arn:aws:wafv2:us-east-1:"):
        return "CloudFront web ACLs live in us-east-1"
    return (
        "expected arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id> "
        "(a WAFv2 web ACL with scope CLOUDFRONT)"
    )


def web_acl_scope(resources: Sequence[Declared]) -> list[Violation]:
    found = []
    for distribution in _of(resources, DISTRIBUTION):
        arn = distribution.inputs.get("webAclId")
        problem = web_acl_problem(str(arn)) if arn else None
        if problem:
            found.append(Violation("web-acl", distribution.name, f"webAclId {arn}: {problem}"))
    return found


# --- the MCP function (issue 25: it reads the bucket) -----------------------------------------

LAMBDA_FUNCTION = "aws:lambda/function:Function"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
#: The function's environment variables naming its bucket and holding the origin secret
#: (agent_contract.mcp_endpoint, restated: the rules import nothing of the project).
BUCKET_VARIABLE = "MCP_BUCKET"
SECRET_VARIABLE = "MCP_ORIGIN_SECRET"
# GetObject is authorized on the object ARN (bucket/*), ListBucket on the bucket ARN; with
# s3:ListBucket a missing key answers 404 NoSuchKey, without it 403 AccessDenied (S3 API
# Reference, GetObject, "Permissions"):
# https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
# The function reads and lists, nothing else: its role must not be able to write, delete or
# read another bucket.
READ_GRANTS = {"s3:GetObject": "{arn}/*", "s3:ListBucket": "{arn}"}
# "You can reserve up to the Unreserved account concurrency value that is shown, minus 100
# for functions that don't have reserved concurrency" (default account quota 1,000):
# https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
RESERVED_CONCURRENCY_MAX = 1000 - 100


def _bucket_functions(resources: Sequence[Declared]) -> list[tuple[Declared, str]]:
    found = []
    for function in _of(resources, LAMBDA_FUNCTION):
        variables = (function.inputs.get("environment") or {}).get("variables") or {}
        if variables.get(BUCKET_VARIABLE):
            found.append((function, str(variables[BUCKET_VARIABLE])))
    return found


def mcp_function_shape(resources: Sequence[Declared]) -> list[Violation]:
    """The MCP function keeps its throttle and its origin secret, and packages code only:
    a published file in its archive would tie the function to the content again."""
    found = []
    for function, _ in _bucket_functions(resources):
        inputs = function.inputs
        reserved = inputs.get("reservedConcurrentExecutions")
        # A whole number (serialized inputs carry numbers as floats: 5.0).
        whole = isinstance(reserved, int | float) and float(reserved).is_integer()
        if not whole or not 1 <= reserved <= RESERVED_CONCURRENCY_MAX:  # type: ignore[operator]
            found.append(
                Violation(
                    "mcp-function",
                    function.name,
                    f"reservedConcurrentExecutions {reserved!r}: the throttle must be a whole "
                    f"number from 1 to {RESERVED_CONCURRENCY_MAX}",
                )
            )
        variables = (inputs.get("environment") or {}).get("variables") or {}
        if len(str(variables.get(SECRET_VARIABLE) or "")) < 32:
            found.append(
                Violation(
                    "mcp-function",
                    function.name,
                    f"environment.variables.{SECRET_VARIABLE}: the origin secret (32+ "
                    "characters) the handler checks is missing",
                )
            )
        assets = getattr(inputs.get("code"), "assets", None) or {}
        packaged = sorted(name for name in assets if not name.endswith(".py"))
        if packaged:
            found.append(
                Violation(
                    "mcp-function",
                    function.name,
                    f"code holds {len(packaged)} file(s) that are not code ({packaged[0]}, "
                    "...): the function reads the bucket, it packages no content",
                )
            )
    return found


def _statements(policy: Any) -> list[Mapping[str, Any]]:
    try:
        document = json.loads(policy) if isinstance(policy, str) else policy
    except ValueError:
        return []
    statements = (document or {}).get("Statement") or []
    return [statements] if isinstance(statements, Mapping) else list(statements)


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(item) for item in value or []]


def mcp_bucket_read_only(resources: Sequence[Declared]) -> list[Violation]:
    """Each role policy's S3 grants are exactly reading the MCP function's bucket (GetObject
    on its objects, ListBucket on it), and the function can read its bucket at all."""
    buckets = {bucket for _, bucket in _bucket_functions(resources)}
    if not buckets:
        return []
    allowed = {
        (action, pattern.format(arn=f"arn:aws:s3:::{bucket}"))
        for bucket in buckets
        for action, pattern in READ_GRANTS.items()
    }
    found, granted = [], set()
    for policy in _of(resources, ROLE_POLICY):
        for index, statement in enumerate(_statements(policy.inputs.get("policy"))):
            actions = _listed(statement.get("Action"))
            if not any(action.lower().startswith("s3:") or action == "*" for action in actions):
                continue
            for action in actions:
                for resource in _listed(statement.get("Resource")):
                    pair = (action, resource)
                    if statement.get("Effect") == "Allow" and pair in allowed:
                        granted.add(pair)
                    else:
                        found.append(
                            Violation(
                                "mcp-bucket-read",
                                policy.name,
                                f"Statement[{index}] {statement.get('Effect')} {action} on "
                                f"{resource}: the MCP function's role may only read its bucket "
                                "(s3:GetObject on bucket/*, s3:ListBucket on the bucket)",
                            )
                        )
    for action, resource in sorted(allowed - granted):
        if action == "s3:GetObject":
            found.append(
                Violation(
                    "mcp-bucket-read",
                    resource,
                    "no role policy grants s3:GetObject here: the MCP function cannot read "
                    "the published files",
                )
            )
    return found


# --- invalidations ---------------------------------------------------------------------------

# Paths start with `/`; `*` only as the last character; at most 3,000 file paths and 15
# wildcard paths in progress per distribution:
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/invalidation-specifying-objects.html
# https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/InvalidationLimits.html
INVALIDATION_FILES_MAX = 3000
INVALIDATION_WILDCARDS_MAX = 15


def invalidation_batch(paths: Sequence[str]) -> list[Violation]:
    found = []
    wildcards = [p for p in paths if "*" in p]
    for path in paths:
        if not path.startswith("/"):
            found.append(Violation("invalidation", path, "must start with '/'"))
        if "*" in path[:-1]:
            found.append(Violation("invalidation", path, "'*' only as the last character"))
    if len(paths) - len(wildcards) > INVALIDATION_FILES_MAX:
        found.append(Violation("invalidation", "batch", f"{len(paths)} file paths > 3,000"))
    if len(wildcards) > INVALIDATION_WILDCARDS_MAX:
        found.append(Violation("invalidation", "batch", f"{len(wildcards)} wildcard paths > 15"))
    if not paths:
        found.append(Violation("invalidation", "batch", "an invalidation needs a path"))
    return found


RULES: tuple[Rule, ...] = (
    response_policy_custom_header_names,
    response_policy_cors,
    origin_custom_headers,
    oac_origins,
    cache_policy_ttls,
    behaviour_methods,
    distribution_shape,
    cloudfront_functions,
    s3_cors_rules,
    bucket_encryption_keeps_etag_md5,
    acm_certificate_region,
    viewer_certificate_tls,
    web_acl_scope,
    mcp_function_shape,
    mcp_bucket_read_only,
)


#: How the Pulumi engine marks a secret in serialized inputs (the SDK's `_special_sig_key`
#: with `_special_secret_sig`, pulumi/runtime/rpc.py): `{SIG: SECRET, "value": ...}`.
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass(frozen=True)
class _Plain:
    typ: str
    name: str
    inputs: Mapping[str, Any]
    provider: str | None


def unwrap_secrets(value: Any) -> Any:
    """`value` with every secret the engine marked replaced by what it holds."""
    if isinstance(value, Mapping):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG:
            return unwrap_secrets(value.get("value"))
        return {key: unwrap_secrets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(item) for item in value]
    return value


def check(resources: Sequence[Declared]) -> list[Violation]:
    """Every rule over the declared resources. A secret input (the MCP origin's header,
    say) is checked by its value: a rule must see what AWS will be sent."""
    plain = [_Plain(r.typ, r.name, unwrap_secrets(r.inputs), r.provider) for r in resources]
    return [violation for rule in RULES for violation in rule(plain)]
