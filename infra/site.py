"""AgentSite: the whole deployment as one ComponentResource.

Resources are declared in the order they depend on each other, one named step each:
the private bucket and its settings, the CloudFront policies, the MCP function (opt-in),
the certificate (custom domain only), the distribution, the bucket policy that lets
only that distribution read, DNS records, and last the published content. How the
files are rendered is not this module's business: it receives a `build(base_url) ->
manifest files` function.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws

from agent_contract import paths
from agent_contract.directives import edge_function_table
from agent_contract.routes import ERROR_CACHE, HEADER_POLICY, ROUTE_RULES
from infra import mcp_function, publisher
from infra.config import SiteConfig
from infra.site_content import SiteContent, encode_input_and_summary

#: AWS-managed origin request policy "Managed-CORS-S3Origin": forwards Origin,
#: Access-Control-Request-Method and Access-Control-Request-Headers to S3, so the
#: bucket's CORS rule can answer preflights. Managed policy ids are global constants.
MANAGED_CORS_S3_ORIGIN_POLICY_ID = "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf"
YEAR = 365 * 86400
#: The error bodies' folder, which gets its own short-lived cache behaviour.
ERROR_PATH_PATTERN = posixpath.dirname(paths.NOT_FOUND) + "/*"
#: CloudFront's default root object is a key, without the path's leading slash.
ROOT_OBJECT = paths.ROOT_OBJECT.lstrip("/")
METHODS = list(HEADER_POLICY.preflight_methods)  # GET, HEAD, OPTIONS
CACHED_METHODS = list(HEADER_POLICY.origin_methods)  # preflights are not cached: S3 answers each
#: The Origin CloudFront adds to every request it sends to S3, so the bucket's CORS rule
#: answers every request, with or without a viewer Origin, and every cached copy carries
#: the CORS headers. "You can configure CloudFront to always add the Origin header to
#: requests that it sends to your origin" (`Origin` is not on the list of headers it
#: cannot add): https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/add-origin-custom-headers.html
#: Any value matches the rule's `*`; `.invalid` (RFC 2606) names no real site.
ORIGIN_HEADER = ("Origin", "https://cdn.agent-access.invalid")

#: The CloudFront Function that serves a document's Markdown on its JSON URL to a viewer
#: whose Accept prefers text/markdown (issue 14: viewer request, URI rewrite only) and
#: names an entry answer's other representation and token estimate (issue 26: viewer
#: response). Its table is agent_contract's, written in by `function_source`.
NEGOTIATION_SOURCE = Path(__file__).parent / "edge_functions" / "markdown_negotiation.js"
_TABLE_PLACEHOLDER = "__AGENT_CONTRACT__"
#: Its runtime: 2.0 is the current one (CreateFunction's FunctionConfig.Runtime).
FUNCTION_RUNTIME = "cloudfront-js-2.0"
#: The behaviours the function runs on: every JSON file in the document and FAQ folders
#: (the function itself leaves index.json and search-index.json alone).
NEGOTIATED_PATTERNS = tuple(
    template.split("{", 1)[0] + "*.json"
    for template in (paths.DOCUMENT_TEMPLATE, paths.FAQ_TEMPLATE)
)
#: The behaviours of the Markdown twins fetched by their own URL: the viewer-response
#: function only (the Link to the JSON, the token estimate).
MARKDOWN_PATTERNS = tuple(
    template.split("{", 1)[0] + "*.md"
    for template in (paths.DOCUMENT_MARKDOWN_TEMPLATE, paths.FAQ_MARKDOWN_TEMPLATE)
)
#: What the local edge sends with either answer of a negotiated URL (agent_edge/edge.py).
NEGOTIATED_HEADERS = {"Vary": "Accept"}


def function_source() -> str:
    """The function's code as published: the source with agent_contract's table in it."""
    source = NEGOTIATION_SOURCE.read_text(encoding="utf-8")
    if source.count(_TABLE_PLACEHOLDER) != 1:
        raise ValueError(f"{NEGOTIATION_SOURCE}: expected {_TABLE_PLACEHOLDER} once")
    table = json.dumps(edge_function_table(), sort_keys=True, separators=(",", ":"))
    return source.replace(_TABLE_PLACEHOLDER, table)


Build = Callable[[str], dict[str, dict[str, Any]]]


def bucket_policy_document(bucket_arn: str, distribution_arn: str) -> str:
    """Only this distribution may read (and list, so a missing key is a 404, not a 403),
    and nobody may use plain HTTP."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [bucket_arn, f"{bucket_arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
                {
                    "Sid": "AllowCloudFrontRead",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudfront.amazonaws.com"},
                    "Action": "s3:GetObject",
                    "Resource": f"{bucket_arn}/*",
                    "Condition": {"StringEquals": {"AWS:SourceArn": distribution_arn}},
                },
                {
                    "Sid": "AllowCloudFrontList",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudfront.amazonaws.com"},
                    "Action": "s3:ListBucket",
                    "Resource": bucket_arn,
                    "Condition": {"StringEquals": {"AWS:SourceArn": distribution_arn}},
                },
            ],
        },
        indent=2,
    )


class AgentSite(pulumi.ComponentResource):
    base_url: pulumi.Output[str]
    bucket_name: pulumi.Output[str]
    distribution_id: pulumi.Output[str]
    files: pulumi.Output[str]  # JSON: path -> "<sha256> <size> <media type>|<cache>"
    last_publish: pulumi.Output[dict[str, Any]]
    # Stack outputs stay small at any size (GitHub caps a step's outputs at 1 MB, and an
    # environment variable at the OS's argument limit): counts and a digest, not the map.
    file_count: pulumi.Output[int]
    files_digest: pulumi.Output[str]
    publish_summary: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        config: SiteConfig,
        build: Build,
        opts: pulumi.ResourceOptions | None = None,
        *,
        discovery_path: str,
    ) -> None:
        super().__init__("agent-access:index:AgentSite", name, None, opts)
        self._name, self._config, self._build = name, config, build
        # The site's discovery document, which every answer's Link names (the brand is
        # the site's: infra/program.py reads it from site.yaml).
        self._discovery_path = discovery_path
        tags = aws.ProviderDefaultTagsArgs(tags=config.tags)
        # Every resource gets the stack's tags through the providers' default tags.
        provider = aws.Provider(
            f"{name}-aws",
            region=config.region,
            default_tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # CloudFront expects the ACM certificate in us-east-1, whatever the stack's region.
        us_east_1 = aws.Provider(
            f"{name}-aws-us-east-1",
            region="us-east-1",
            default_tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        child = pulumi.ResourceOptions(parent=self, provider=provider)

        bucket, public_access = self._private_bucket(child)
        headers_policy, caches, oac = self._policies(child)
        mcp = self._mcp_function(bucket, child)
        negotiation = self._markdown_negotiation(child)
        certificate_arn = self._certificate(us_east_1)
        distribution = self._distribution(
            bucket, oac, caches, headers_policy, mcp, negotiation, certificate_arn, child
        )
        self._bucket_policy(bucket, public_access, distribution, child)
        self._dns(distribution, child)
        self._content(bucket, distribution)

    def _private_bucket(
        self, child: pulumi.ResourceOptions
    ) -> tuple[aws.s3.Bucket, aws.s3.BucketPublicAccessBlock]:
        """The bucket, private: no public access, owner-enforced, encrypted, versioned
        with expiry, and the CORS rule that answers preflights."""
        name, config = self._name, self._config
        bucket = aws.s3.Bucket(f"{name}-content", force_destroy=True, opts=child)
        public_access = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    ),
                    bucket_key_enabled=True,
                )
            ],
            opts=child,
        )
        versioning = aws.s3.BucketVersioning(
            f"{name}-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(
                status="Enabled"
            ),
            opts=child,
        )
        # Versioning keeps every overwritten file for rollback; without expiry the bill
        # grows forever (AWS FSBP S3.13).
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-lifecycle",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-noncurrent-versions",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=config.noncurrent_version_days
                    ),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=7
                    ),
                )
            ],
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[versioning])
            ),
        )
        # CloudFront forwards OPTIONS to S3; this rule is what answers a preflight. With
        # the origin custom header `Origin`, it also puts Access-Control-Allow-Origin: *
        # and the exposed ETag on every response S3 gives, the error document included.
        aws.s3.BucketCorsConfiguration(
            f"{name}-cors",
            bucket=bucket.id,
            cors_rules=[
                aws.s3.BucketCorsConfigurationCorsRuleArgs(
                    allowed_methods=list(HEADER_POLICY.origin_methods),
                    allowed_origins=[HEADER_POLICY.allow_origin],
                    allowed_headers=["*"],
                    expose_headers=list(HEADER_POLICY.expose_headers),
                    max_age_seconds=HEADER_POLICY.preflight_max_age,
                )
            ],
            opts=child,
        )
        return bucket, public_access

    def _policies(
        self, child: pulumi.ResourceOptions
    ) -> tuple[
        aws.cloudfront.ResponseHeadersPolicy,
        tuple[aws.cloudfront.CachePolicy, aws.cloudfront.CachePolicy],
        aws.cloudfront.OriginAccessControl,
    ]:
        """Origin access control, the cache policies (files, errors) and the response
        headers policy (CORS, security headers)."""
        name = self._name
        oac = aws.cloudfront.OriginAccessControl(
            f"{name}-oac",
            description="Signed requests from the agent-access distribution to its bucket",
            origin_access_control_origin_type="s3",
            signing_behavior="always",
            signing_protocol="sigv4",
            opts=child,
        )
        # Objects' s-maxage decides; the default only covers an object without one.
        longest_edge_ttl = max(rule.cache.edge_ttl for rule in ROUTE_RULES)
        default_cache = self._cache_policy(name, "files", longest_edge_ttl, YEAR, child)
        error_cache = self._cache_policy(
            name, "errors", ERROR_CACHE.edge_ttl, ERROR_CACHE.edge_ttl, child
        )
        headers_policy = self._headers_policy(f"{name}-headers", {}, child)
        return headers_policy, (default_cache, error_cache), oac

    def _headers_policy(
        self,
        resource_name: str,
        extra_custom: dict[str, str],
        child: pulumi.ResourceOptions,
        cors: tuple[list[str], list[str], list[str]] | None = None,
    ) -> aws.cloudfront.ResponseHeadersPolicy:
        """CORS, security headers and the custom headers every response carries, plus
        `extra_custom` (the negotiated behaviours' `Vary: Accept`). `cors` replaces the
        CORS section's (methods, allow headers, expose headers): /mcp's POST."""
        config = self._config
        methods, allow_headers, expose_headers = cors or (
            list(HEADER_POLICY.preflight_methods),
            ["*"],
            list(HEADER_POLICY.expose_headers),
        )
        return aws.cloudfront.ResponseHeadersPolicy(
            resource_name,
            comment="CORS * for CORS requests (S3 answers the others), plus security headers",
            # CloudFront refuses CORS header names among custom headers ("... is a CORS
            # header and cannot be set as custom header"); the CORS section only answers
            # requests carrying Origin, and S3's rule (through ORIGIN_HEADER) covers the
            # rest. Origin override makes the section's values replace S3's copies, so a
            # CORS request still gets each header once. docs/decisions.md has the sources.
            cors_config=aws.cloudfront.ResponseHeadersPolicyCorsConfigArgs(
                access_control_allow_credentials=False,
                access_control_allow_headers=aws.cloudfront.ResponseHeadersPolicyCorsConfigAccessControlAllowHeadersArgs(
                    items=allow_headers
                ),
                access_control_allow_methods=aws.cloudfront.ResponseHeadersPolicyCorsConfigAccessControlAllowMethodsArgs(
                    items=methods
                ),
                access_control_allow_origins=aws.cloudfront.ResponseHeadersPolicyCorsConfigAccessControlAllowOriginsArgs(
                    items=[HEADER_POLICY.allow_origin]
                ),
                access_control_expose_headers=aws.cloudfront.ResponseHeadersPolicyCorsConfigAccessControlExposeHeadersArgs(
                    items=expose_headers
                ),
                access_control_max_age_sec=HEADER_POLICY.preflight_max_age,
                origin_override=True,
            ),
            security_headers_config=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigArgs(
                strict_transport_security=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigStrictTransportSecurityArgs(
                    access_control_max_age_sec=HEADER_POLICY.hsts_max_age,
                    include_subdomains=HEADER_POLICY.hsts_include_subdomains,
                    preload=config.hsts_preload,
                    override=True,
                ),
                content_type_options=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigContentTypeOptionsArgs(
                    override=True
                ),
                content_security_policy=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigContentSecurityPolicyArgs(
                    content_security_policy=HEADER_POLICY.content_security_policy, override=True
                ),
                referrer_policy=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigReferrerPolicyArgs(
                    referrer_policy=HEADER_POLICY.referrer_policy, override=True
                ),
                frame_options=aws.cloudfront.ResponseHeadersPolicySecurityHeadersConfigFrameOptionsArgs(
                    frame_option=HEADER_POLICY.frame_options, override=True
                ),
            ),
            # RFC 9727's `Link: rel="api-catalog"` on every response: a custom header is
            # added to every response of the behaviours using the policy (AWS API reference,
            # ResponseHeadersPolicyCustomHeader); S3 object metadata cannot carry it.
            custom_headers_config=aws.cloudfront.ResponseHeadersPolicyCustomHeadersConfigArgs(
                items=[
                    aws.cloudfront.ResponseHeadersPolicyCustomHeadersConfigItemArgs(
                        header=name, value=value, override=True
                    )
                    for name, value in {
                        **HEADER_POLICY.custom(self._discovery_path),
                        **extra_custom,
                    }.items()
                ]
            ),
            opts=child,
        )

    def _markdown_negotiation(
        self, child: pulumi.ResourceOptions
    ) -> tuple[
        aws.cloudfront.Function, aws.cloudfront.Function, aws.cloudfront.ResponseHeadersPolicy
    ]:
        """`Accept: text/markdown` on a document's JSON URL, at the edge: a CloudFront
        Function rewrites the URI to the `.md` twin before the cache lookup, so the cache
        key is the URI and nothing else; the behaviours' own headers policy adds
        `Vary: Accept` (docs/decisions.md, issue 14). The same code published a second
        time for viewer responses: the alternate Link and the token estimate (issue 26)."""
        name = self._name
        code = function_source()

        def function(suffix: str, resource: str, comment: str) -> aws.cloudfront.Function:
            # Function names are unique in the account: the stack goes in, and characters
            # outside [A-Za-z0-9_-] become '-' (the API's pattern, aws_rules.py).
            function_name = re.sub(r"[^A-Za-z0-9_-]", "-", f"{name}-{pulumi.get_stack()}-{suffix}")
            return aws.cloudfront.Function(
                f"{name}-{resource}",
                name=function_name[:64],
                runtime=FUNCTION_RUNTIME,
                comment=comment,
                code=code,
                publish=True,
                opts=child,
            )

        request = function(
            "markdown",
            "markdown-negotiation",
            "Accept: text/markdown on a document's JSON URL serves its .md twin",
        )
        response = function(
            "links",
            "answer-links",
            "An entry's answer names its other representation; Markdown its token estimate",
        )
        policy = self._headers_policy(f"{name}-headers-negotiated", NEGOTIATED_HEADERS, child)
        return request, response, policy

    def _mcp_function(
        self, bucket: aws.s3.Bucket, child: pulumi.ResourceOptions
    ) -> mcp_function.McpOrigin | None:
        """The live MCP server at /mcp, opt-in (infra/mcp_function.py): it reads the
        bucket's published files, so it depends on the bucket and nothing else here."""
        config = self._config
        if not config.mcp:
            return None
        # Its own policy: the same security and custom headers, a CORS section with POST
        # (the shared one allows GET/HEAD/OPTIONS only). docs/decisions.md, issue 13.
        mcp_policy = self._headers_policy(
            f"{self._name}-mcp-headers", {}, child, cors=mcp_function.CORS
        )
        return mcp_function.declare(f"{self._name}-mcp", config, mcp_policy.id, bucket, child)

    def _certificate(self, us_east_1: aws.Provider) -> pulumi.Input[str] | None:
        """The ACM certificate for a custom domain: given, or requested and validated."""
        name, config = self._name, self._config
        certificate_arn: pulumi.Input[str] | None = config.certificate_arn
        if config.domain and config.hosted_zone_id and not config.certificate_arn:
            certificate_arn = self._validated_certificate(name, config, us_east_1)
        return certificate_arn

    def _distribution(
        self,
        bucket: aws.s3.Bucket,
        oac: aws.cloudfront.OriginAccessControl,
        caches: tuple[aws.cloudfront.CachePolicy, aws.cloudfront.CachePolicy],
        headers_policy: aws.cloudfront.ResponseHeadersPolicy,
        mcp: mcp_function.McpOrigin | None,
        negotiation: tuple[
            aws.cloudfront.Function, aws.cloudfront.Function, aws.cloudfront.ResponseHeadersPolicy
        ],
        certificate_arn: pulumi.Input[str] | None,
        child: pulumi.ResourceOptions,
    ) -> aws.cloudfront.Distribution:
        """HTTPS only, the bucket as the origin, a short-lived behaviour for errors."""
        name, config = self._name, self._config
        default_cache, error_cache = caches
        negotiation_function, links_function, negotiated_headers = negotiation
        # The viewer-response half runs on every entry answer, JSON or Markdown.
        links_association = aws.cloudfront.DistributionOrderedCacheBehaviorFunctionAssociationArgs(
            event_type="viewer-response", function_arn=links_function.arn
        )
        origin_id = "content-bucket"

        def behaviour(cache_policy: aws.cloudfront.CachePolicy) -> dict[str, Any]:
            return {
                "target_origin_id": origin_id,
                "viewer_protocol_policy": "https-only",  # spec: HTTPS only, no redirect
                "allowed_methods": METHODS,
                "cached_methods": CACHED_METHODS,
                "compress": True,
                "cache_policy_id": cache_policy.id,
                "origin_request_policy_id": MANAGED_CORS_S3_ORIGIN_POLICY_ID,
                "response_headers_policy_id": headers_policy.id,
            }

        distribution = aws.cloudfront.Distribution(
            f"{name}-cdn",
            comment=f"agent-access API ({pulumi.get_stack()})",
            enabled=True,
            is_ipv6_enabled=True,
            http_version="http2and3",
            price_class=config.price_class,
            default_root_object=ROOT_OBJECT,
            aliases=[config.domain] if config.domain else None,
            origins=[
                aws.cloudfront.DistributionOriginArgs(
                    origin_id=origin_id,
                    domain_name=bucket.bucket_regional_domain_name,
                    origin_access_control_id=oac.id,
                    custom_headers=[
                        aws.cloudfront.DistributionOriginCustomHeaderArgs(
                            name=ORIGIN_HEADER[0], value=ORIGIN_HEADER[1]
                        )
                    ],
                ),
                *([mcp.origin] if mcp else []),
            ],
            default_cache_behavior=aws.cloudfront.DistributionDefaultCacheBehaviorArgs(
                **behaviour(default_cache)
            ),
            # The error body gets its own short edge TTL, and the same headers policy:
            # CORS must be on errors too.
            ordered_cache_behaviors=[
                *(mcp.behaviours if mcp else []),
                aws.cloudfront.DistributionOrderedCacheBehaviorArgs(
                    path_pattern=ERROR_PATH_PATTERN, **behaviour(error_cache)
                ),
                # Document and FAQ JSON: the same cache policy (the function's rewritten
                # URI is the key), the negotiation function, and `Vary: Accept`.
                *(
                    aws.cloudfront.DistributionOrderedCacheBehaviorArgs(
                        path_pattern=pattern,
                        **{
                            **behaviour(default_cache),
                            "response_headers_policy_id": negotiated_headers.id,
                        },
                        function_associations=[
                            aws.cloudfront.DistributionOrderedCacheBehaviorFunctionAssociationArgs(
                                event_type="viewer-request",
                                function_arn=negotiation_function.arn,
                            ),
                            links_association,
                        ],
                    )
                    for pattern in NEGOTIATED_PATTERNS
                ),
                # The Markdown twins by their own URL: the viewer-response half only.
                *(
                    aws.cloudfront.DistributionOrderedCacheBehaviorArgs(
                        path_pattern=pattern,
                        **behaviour(default_cache),
                        function_associations=[links_association],
                    )
                    for pattern in MARKDOWN_PATTERNS
                ),
            ],
            custom_error_responses=[
                aws.cloudfront.DistributionCustomErrorResponseArgs(
                    error_code=404,
                    response_code=404,
                    response_page_path=paths.NOT_FOUND,
                    error_caching_min_ttl=ERROR_CACHE.edge_ttl,
                )
            ],
            restrictions=aws.cloudfront.DistributionRestrictionsArgs(
                geo_restriction=aws.cloudfront.DistributionRestrictionsGeoRestrictionArgs(
                    restriction_type="none"
                )
            ),
            viewer_certificate=self._viewer_certificate(certificate_arn),
            logging_config=aws.cloudfront.DistributionLoggingConfigArgs(
                bucket=config.log_bucket, prefix=config.log_prefix, include_cookies=False
            )
            if config.log_bucket
            else None,
            web_acl_id=config.web_acl_arn,
            opts=child,
        )
        return distribution

    def _bucket_policy(
        self,
        bucket: aws.s3.Bucket,
        public_access: aws.s3.BucketPublicAccessBlock,
        distribution: aws.cloudfront.Distribution,
        child: pulumi.ResourceOptions,
    ) -> None:
        """Only this distribution may read the bucket."""
        name = self._name
        aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=bucket.id,
            policy=pulumi.Output.all(bucket.arn, distribution.arn).apply(
                lambda arns: bucket_policy_document(arns[0], arns[1])
            ),
            # A policy that grants a service principal is refused while the public
            # access block is still being applied.
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[public_access])
            ),
        )

    def _dns(
        self, distribution: aws.cloudfront.Distribution, child: pulumi.ResourceOptions
    ) -> None:
        """Alias records for a custom domain in its hosted zone."""
        name, config = self._name, self._config
        if config.domain and config.hosted_zone_id:
            for record_type in ("A", "AAAA"):
                aws.route53.Record(
                    f"{name}-alias-{record_type.lower()}",
                    zone_id=config.hosted_zone_id,
                    name=config.domain,
                    type=record_type,
                    aliases=[
                        aws.route53.RecordAliasArgs(
                            name=distribution.domain_name,
                            zone_id=distribution.hosted_zone_id,
                            evaluate_target_health=False,
                        )
                    ],
                    opts=child,
                )

    def _content(self, bucket: aws.s3.Bucket, distribution: aws.cloudfront.Distribution) -> None:
        """The published files (SiteContent, whose provider is the publisher) and the
        component's outputs."""
        name, config, build = self._name, self._config, self._build
        base_url: pulumi.Output[str] = (
            pulumi.Output.from_input(config.base_url)
            if config.base_url
            else distribution.domain_name.apply(lambda domain: f"https://{domain}")
        )
        # One string, not a map: see infra/site_content.py and docs/decisions.md. The
        # count and digest exported are those of the files registered (what a
        # successful `pulumi up` publishes), computed while writing the string.
        built = base_url.apply(lambda url: encode_input_and_summary(build(url)))
        files = built.apply(lambda encoded: encoded[0])
        content = SiteContent(
            f"{name}-files",
            bucket=bucket.bucket,
            distribution_id=distribution.id,
            region=config.region,
            source_dir=str(config.dist_dir),
            files=files,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[distribution]),
        )

        self.base_url = base_url
        self.bucket_name = bucket.bucket
        self.distribution_id = distribution.id
        self.files = content.files
        self.last_publish = content.last_publish
        self.file_count = built.apply(lambda encoded: encoded[1])
        self.files_digest = built.apply(lambda encoded: encoded[2])
        self.publish_summary = content.last_publish.apply(publisher.publish_summary)
        self.register_outputs(
            {
                "base_url": base_url,
                "bucket_name": bucket.bucket,
                "distribution_id": distribution.id,
                "file_count": self.file_count,
                "files_digest": self.files_digest,
                "publish_summary": self.publish_summary,
            }
        )

    @staticmethod
    def _cache_policy(
        name: str, purpose: str, default_ttl: int, max_ttl: int, opts: pulumi.ResourceOptions
    ) -> aws.cloudfront.CachePolicy:
        """Cookies, headers and query strings stay out of the cache key and away from S3
        (a random `?x=` must not bypass the cache); objects' s-maxage decides within
        [0, max_ttl]."""
        return aws.cloudfront.CachePolicy(
            f"{name}-cache-{purpose}",
            comment=f"agent-access {purpose}: no cookies, headers or query strings in the key",
            min_ttl=0,
            default_ttl=default_ttl,
            max_ttl=max_ttl,
            parameters_in_cache_key_and_forwarded_to_origin=aws.cloudfront.CachePolicyParametersInCacheKeyAndForwardedToOriginArgs(
                cookies_config=aws.cloudfront.CachePolicyParametersInCacheKeyAndForwardedToOriginCookiesConfigArgs(
                    cookie_behavior="none"
                ),
                headers_config=aws.cloudfront.CachePolicyParametersInCacheKeyAndForwardedToOriginHeadersConfigArgs(
                    header_behavior="none"
                ),
                query_strings_config=aws.cloudfront.CachePolicyParametersInCacheKeyAndForwardedToOriginQueryStringsConfigArgs(
                    query_string_behavior="none"
                ),
                enable_accept_encoding_gzip=True,
                enable_accept_encoding_brotli=True,
            ),
            opts=opts,
        )

    @staticmethod
    def _viewer_certificate(
        certificate_arn: pulumi.Input[str] | None,
    ) -> aws.cloudfront.DistributionViewerCertificateArgs:
        if certificate_arn is None:
            # The default *.cloudfront.net certificate cannot be pinned above TLSv1.
            return aws.cloudfront.DistributionViewerCertificateArgs(
                cloudfront_default_certificate=True
            )
        return aws.cloudfront.DistributionViewerCertificateArgs(
            acm_certificate_arn=certificate_arn,
            ssl_support_method="sni-only",
            minimum_protocol_version="TLSv1.2_2021",
        )

    def _validated_certificate(
        self, name: str, config: SiteConfig, us_east_1: aws.Provider
    ) -> pulumi.Output[str]:
        options = pulumi.ResourceOptions(parent=self, provider=us_east_1)
        certificate = aws.acm.Certificate(
            f"{name}-certificate",
            domain_name=config.domain,
            validation_method="DNS",
            opts=options,
        )
        option = certificate.domain_validation_options[0]
        record = aws.route53.Record(
            f"{name}-certificate-validation",
            zone_id=config.hosted_zone_id,  # type: ignore[arg-type]
            name=option.resource_record_name,
            type=option.resource_record_type,
            records=[option.resource_record_value],
            ttl=300,
            allow_overwrite=True,
            opts=options,
        )
        validation = aws.acm.CertificateValidation(
            f"{name}-certificate-validation",
            certificate_arn=certificate.arn,
            validation_record_fqdns=[record.fqdn],
            opts=options,
        )
        return validation.certificate_arn
