"""Wires the builder into the infrastructure: the one place that knows both."""

from __future__ import annotations

from typing import Any

from agent_contract import paths
from content_builder.build import build
from content_builder.loader import SITE_FILE
from content_builder.source import SiteSource
from content_builder.writer import manifest
from content_builder.yaml_io import read_yaml_mapping
from infra.config import SiteConfig
from infra.mcp_function import mcp_endpoint
from infra.site import AgentSite


def build_files(config: SiteConfig, base_url: str) -> dict[str, dict[str, Any]]:
    """Build with the frozen lock, so a deployment never dates content itself (a stale
    content.lock.json fails the preview, with the file and the fix named), and return
    the manifest's files: the SiteContent input `pulumi preview --diff` shows."""
    endpoint = mcp_endpoint(config)
    result, _ = build(
        config.site_dir, config.dist_dir, base_url, frozen=True, mcp_endpoint=endpoint
    )
    return manifest(result.artifacts, base_url)["files"]


def discovery_path(config: SiteConfig) -> str:
    """The site's discovery document path (its brand is site.yaml's): every answer's Link
    names it, and the response headers policy is declared before the build runs. A bad
    site.yaml is left to the build, which names the file and field."""
    try:
        brand = SiteSource.model_validate(
            read_yaml_mapping(config.site_dir / SITE_FILE, SITE_FILE)
        ).brand
    except Exception:  # a bad site.yaml: the build reports it, naming the file and field
        brand = SiteSource.model_fields["brand"].default
    return paths.discovery(brand)


def define(config: SiteConfig) -> AgentSite:
    return AgentSite(
        "agent-access",
        config,
        lambda base_url: build_files(config, base_url),
        discovery_path=discovery_path(config),
    )
