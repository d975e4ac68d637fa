"""Wires the builder into the infrastructure: the one place that knows both."""

from __future__ import annotations

from typing import Any

from content_builder.build import build, discovery_path
from content_builder.writer import manifest
from infra.config import SiteConfig
from infra.mcp_function import mcp_endpoint
from infra.site import AgentSite


def build_files(config: SiteConfig, base_url: str) -> dict[str, dict[str, Any]]:
    """Build with the frozen lock, so a deployment never dates content itself (a stale
    content.lock.json fails the preview, with the file and the fix named), and return
    the manifest's files: the SiteContent input `pulumi preview --diff` shows."""
    endpoint = mcp_endpoint(config, base_url)
    result, _ = build(
        config.site_dir, config.dist_dir, base_url, frozen=True, mcp_endpoint=endpoint
    )
    return manifest(result.artifacts, base_url)["files"]


def define(config: SiteConfig) -> AgentSite:
    return AgentSite(
        "agent-access",
        config,
        lambda base_url: build_files(config, base_url),
        discovery_path=discovery_path(config.site_dir),
    )
