"""The error body CloudFront and `serve` answer unknown paths with (the spec leaves errors open)."""

from __future__ import annotations

from agent_contract import paths
from agent_contract.models import ErrorDetail, ErrorResponse
from content_builder.loaded import Site


def not_found(site: Site) -> ErrorResponse:
    return ErrorResponse(
        error=ErrorDetail(
            status=404,
            code="not_found",
            message="No file is published at this path. The discovery document lists every "
            "interface.",
            discovery=site.base_url + paths.discovery(site.config.brand),
        )
    )
