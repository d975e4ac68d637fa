"""Stack configuration, read once at the top of the program and validated."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from infra.aws_rules import ACM_REGION, web_acl_problem

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: The site folder when the stack sets no `siteDir`: the sample.
DEFAULT_SITE_DIR = "site_data"
PRICE_CLASSES = ("PriceClass_100", "PriceClass_200", "PriceClass_All")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class SiteConfig:
    region: str
    domain: str | None = None
    certificate_arn: str | None = None  # an ACM certificate in us-east-1 covering `domain`
    hosted_zone_id: str | None = None  # Route 53 zone of `domain`: certificate + alias records
    price_class: str = "PriceClass_100"
    log_bucket: str | None = None  # e.g. "my-logs.s3.amazonaws.com" (ACLs enabled)
    log_prefix: str = "cloudfront/"
    web_acl_arn: str | None = None
    noncurrent_version_days: int = 30
    # HSTS `preload` asks browsers' preload lists to pin HTTPS for the domain and every
    # subdomain, for years; only the domain's owner can make that promise (hstspreload.org).
    hsts_preload: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    site_dir: Path = PROJECT_ROOT / DEFAULT_SITE_DIR
    dist_dir: Path = PROJECT_ROOT / "dist"
    mcp: McpServerConfig | None = None  # the live MCP server at /mcp (infra/mcp_function.py)

    def __post_init__(self) -> None:
        if self.price_class not in PRICE_CLASSES:
            raise ConfigError(f"priceClass: expected one of {', '.join(PRICE_CLASSES)}")
        if self.noncurrent_version_days < 1:
            raise ConfigError("noncurrentVersionDays: expected a whole number of days >= 1")
        if self.domain:
            if not re.fullmatch(r"(?=.{1,253}$)([a-z0-9-]{1,63}\.)+[a-z]{2,63}", self.domain):
                raise ConfigError(f"domain: expected a lowercase host name, got {self.domain!r}")
            if not (self.certificate_arn or self.hosted_zone_id):
                raise ConfigError("domain: also set certificateArn or hostedZoneId")
        elif self.certificate_arn or self.hosted_zone_id:
            raise ConfigError("certificateArn and hostedZoneId need a domain")
        # CloudFront only accepts certificates from us-east-1.
        if self.certificate_arn and not self.certificate_arn.startswith(
            f"arn:aws:acm:{ACM_REGION}:"
        ):
            raise ConfigError("certificateArn: CloudFront needs a certificate in us-east-1")
        if self.web_acl_arn:
            problem = web_acl_problem(self.web_acl_arn)
            if problem:
                raise ConfigError(f"webAclArn: {problem}, got {self.web_acl_arn!r}")
        if self.hsts_preload and not self.domain:
            raise ConfigError(
                "hstsPreload: preload lists take registrable domains, not *.cloudfront.net; "
                "set a domain too"
            )

    @property
    def base_url(self) -> str | None:
        """Known up front only with a custom domain; otherwise the distribution's domain."""
        return f"https://{self.domain}" if self.domain else None


@dataclass(frozen=True)
class McpServerConfig:
    origin_secret: str  # the header CloudFront adds and the function checks
    reserved_concurrency: int = 10
    layer_dir: Path = PROJECT_ROOT / "build" / "mcp-lambda-layer"  # `make mcp-layer`

    def __post_init__(self) -> None:
        if len(self.origin_secret) < 32:
            raise ConfigError("mcpOriginSecret: expected a secret of at least 32 characters")
        if self.reserved_concurrency < 1:
            raise ConfigError("mcpReservedConcurrency: expected a whole number >= 1")


def resolve_site_dir(value: str, root: Path = PROJECT_ROOT) -> Path:
    """The stack's `siteDir`: a folder holding site.yaml, relative to the project folder
    (where Pulumi.yaml is, whatever folder `pulumi` was started from) or absolute, so a
    team keeps this project beside its docs (`../docs-site`) or as a submodule."""
    if not value.strip():
        raise ConfigError(f"siteDir: expected a folder, got {value!r}")
    folder = (root / value).resolve()
    where = f"siteDir {value!r} is {folder} (relative to the project folder {root})"
    if not folder.is_dir():
        raise ConfigError(f"siteDir: {where}, which is not a folder")
    if not (folder / "site.yaml").is_file():
        raise ConfigError(f"siteDir: {where}, which has no site.yaml")
    return folder


def _int_or(value: int | None, default: int) -> int:
    # Not `value or default`: 0 is a value to validate (and refuse), not "unset".
    return default if value is None else value


def load() -> SiteConfig:
    import pulumi

    config = pulumi.Config()
    aws = pulumi.Config("aws")
    site_dir = config.get("siteDir")
    # Unset: the dataclass's default (site_data/); a test harness may set its own.
    where = {} if site_dir is None else {"site_dir": resolve_site_dir(site_dir)}
    return SiteConfig(
        **where,  # type: ignore[arg-type]
        region=aws.require("region"),
        domain=config.get("domain"),
        certificate_arn=config.get("certificateArn"),
        hosted_zone_id=config.get("hostedZoneId"),
        price_class=config.get("priceClass") or "PriceClass_100",
        log_bucket=config.get("logBucket"),
        log_prefix=config.get("logPrefix") or "cloudfront/",
        web_acl_arn=config.get("webAclArn"),
        noncurrent_version_days=_int_or(config.get_int("noncurrentVersionDays"), 30),
        hsts_preload=bool(config.get_bool("hstsPreload")),
        mcp=McpServerConfig(
            origin_secret=config.get("mcpOriginSecret") or "",  # set with --secret
            reserved_concurrency=_int_or(config.get_int("mcpReservedConcurrency"), 10),
        )
        if config.get_bool("mcpServer")
        else None,
        tags={
            "project": pulumi.get_project(),
            "stack": pulumi.get_stack(),
            "managed-by": "pulumi",
        },
    )
