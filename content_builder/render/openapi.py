"""OpenAPI 3.1 description: one GET per published file, schemas from the pydantic models."""

from __future__ import annotations

from typing import Any

from agent_contract import paths
from agent_contract.endpoints import (
    ENDPOINTS,
    ID_LIST_LIMIT,
    JSON_MEDIA,
    TEXT_MEDIA,
    Endpoint,
    Parameter,
    openapi_rows,
)
from agent_contract.models import ErrorResponse, Resource
from content_builder.loaded import Site
from content_builder.render import openapi_schemas
from content_builder.render.catalog import Catalog
from content_builder.render.llms import llms_parts
from content_builder.render.shards import sharded_index
from content_builder.source import ID_PATTERN

OPENAPI_VERSION = "3.1.0"
API_VERSION = "1.0.0"
_REF = openapi_schemas.REF

_RESPONSE_HEADERS = {
    "Access-Control-Allow-Origin": {
        "description": "Always `*`: the API is public and cross-origin reads are open.",
        "schema": {"type": "string", "const": "*"},
    },
    "Cache-Control": {
        "description": "Edge and browser caching, per route.",
        "schema": {"type": "string"},
    },
    "Access-Control-Expose-Headers": {
        "description": "Always includes `ETag`, so browser agents can read it cross-origin.",
        "schema": {"type": "string"},
    },
    "ETag": {
        "description": "Validator of this version of the file; send it back in If-None-Match "
        "to get a 304 when it has not changed.",
        "schema": {"type": "string"},
    },
}
#: Headers of every answer: CORS on errors too (spec rule 4), caching on 404s too.
_ERROR_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Cache-Control")


def _header_refs(names: tuple[str, ...] | dict[str, Any]) -> dict[str, Any]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


#: The build cache's value (cache.py `put_latest`) holding the component schemas.
_SCHEMAS = "openapi_component_schemas"


def cached_component_schemas(site: Site) -> dict[str, Any]:
    """The component schemas: shipped with the code for its contract (openapi_schemas.py),
    else as the last build kept them when it could (they depend on the code alone, which
    keys the build cache: its fingerprint holds pydantic's version too), else walked out
    of the models (~13 ms)."""
    shipped = openapi_schemas.shipped_component_schemas()
    if shipped is not None:
        return shipped
    known = site.cache.get_latest(_SCHEMAS)
    if isinstance(known, dict):
        return known
    made = openapi_schemas.component_schemas()
    site.cache.put_latest(_SCHEMAS, made)
    return made


def _json(model: type[Resource], media_type: str = "application/json") -> dict[str, Any]:
    return {media_type: {"schema": {"$ref": _REF.format(model=model.__name__)}}}


_OPENAPI_DOCUMENT = {"application/json": {"schema": {"type": "object"}}}


def _operation(
    operation_id: str,
    summary: str,
    content: dict[str, Any],
    parameter: dict[str, Any] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": operation_id, "summary": summary}
    # If-None-Match is not declared as a parameter: it is HTTP's, any client may send it,
    # and fuzzers would send `*` and expect the 200 (docs/decisions.md). The 304 is.
    if parameter is not None:
        operation["parameters"] = [parameter]
    operation["responses"] = {
        "200": {
            "description": "The file.",
            "headers": _header_refs(_RESPONSE_HEADERS),
            "content": content,
        },
        # RFC 9110 15.4.5: no body, and no Content-Type; the validator and caching headers.
        "304": {
            "description": "Not modified: the request's If-None-Match named the current ETag; "
            "no body.",
            "headers": _header_refs(_RESPONSE_HEADERS),
        },
        "404": {
            "description": "No such file.",
            "headers": _header_refs(_ERROR_HEADERS),
            "content": _json(ErrorResponse),
        },
    }
    return {"get": operation}


def _parameter(parameter: Parameter, ids: dict[str, list[str]], index_url: str) -> dict[str, Any]:
    values = ids[parameter.name]
    description = f"Id of the {parameter.what}."
    schema: dict[str, Any]
    if parameter.pattern:
        # Shards and entry-file prefixes are too many to list: the term map names them.
        schema = {"type": "string", "pattern": parameter.pattern, "examples": values[:1]}
    elif len(values) <= ID_LIST_LIMIT:
        schema = {"type": "string", "enum": values}
    else:
        # A generator turns an enum into a type: 10,000 members of one, and 1.7 MB of
        # OpenAPI, help no client (issue 25's limit, as the MCP manifest's).
        schema = {"type": "string", "pattern": ID_PATTERN, "examples": values[:1]}
        description += f" {len(values):,} of them, listed by the content index ({index_url})."
    return {
        "name": parameter.name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
    }


def _content(endpoint: Endpoint) -> dict[str, Any]:
    if endpoint.model is not None:
        return _json(endpoint.model, endpoint.media_type)
    if endpoint.media_type == JSON_MEDIA:
        return _OPENAPI_DOCUMENT
    if endpoint.media_type == TEXT_MEDIA:
        return {endpoint.media_type: {"schema": {"type": "string"}}}
    # Markdown: an unconstrained schema, described. openapi-core reads only JSON and
    # text/plain bodies into a str, so a text/markdown body reaches its validator as
    # bytes, which `type: string` refuses; openapi-python-client returns the text either
    # way (docs/decisions.md, issue 26).
    return {endpoint.media_type: {"schema": {"description": "UTF-8 Markdown text."}}}


def _search_file_examples(site: Site, catalog: Catalog) -> dict[str, list[str]]:
    examples: dict[str, list[str]] = {"shard": [], "prefix": []}
    for path in (artifact.path for artifact in sharded_index(site, catalog).files):
        name = path.rsplit("/", 1)[1].removesuffix(".json")
        key = "shard" if path.startswith(paths.SEARCH_SHARD_TEMPLATE.split("{")[0]) else "prefix"
        if not examples[key]:
            examples[key].append(name)
    return examples


def openapi_document(site: Site, catalog: Catalog) -> dict[str, Any]:
    ids = {
        "document_id": [document.id for document in catalog.documents],
        "faq_id": [faq.id for faq in catalog.faqs],
        "part": [name for name, _ in llms_parts(site, catalog)],
        # The sharded search index's files: one example each (the term map names them all).
        **_search_file_examples(site, catalog),
    }
    operations = {
        endpoint.resolve(site.config.brand): _operation(
            endpoint.operation_id,
            endpoint.summary,
            _content(endpoint),
            _parameter(endpoint.parameter, ids, site.base_url + paths.CONTENT_INDEX)
            if endpoint.parameter
            else None,
        )
        for endpoint in openapi_rows()
        # A template no file matches (no FAQ entry yet) is left out: an operation whose
        # only parameter has an empty enum could never be called (issue 23).
        if endpoint.parameter is None or ids[endpoint.parameter.name]
    }
    conventions = ", ".join(e.resolve(site.config.brand) for e in ENDPOINTS if not e.openapi)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"{site.config.name} agent-access API",
            "version": API_VERSION,
            "description": f"{site.config.description} Read-only static files: GET only, "
            "no authentication, CORS open, HTTPS only, edge-cached. Web conventions "
            f"published beside the API ({conventions}) are found at their well-known "
            "locations and are not operations here.",
            "contact": {"email": site.config.contact}
            if "@" in site.config.contact
            else {"url": site.config.contact},
            # The content's terms are the site's; the API points there rather than
            # claiming a license the site owner never chose (docs/decisions.md).
            "license": {"name": f"Terms of {site.config.name}", "url": str(site.config.website)},
        },
        "servers": [{"url": site.base_url}],
        # Public: no authentication on any operation.
        "security": [],
        "paths": operations,
        "components": {
            "schemas": cached_component_schemas(site),
            "headers": {
                name: {"description": header["description"], "schema": header["schema"]}
                for name, header in _RESPONSE_HEADERS.items()
            },
        },
    }
