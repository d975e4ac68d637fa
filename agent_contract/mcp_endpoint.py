"""What the parties of the live MCP endpoint must agree on, stated once.

The local edge (`agent_edge.serve`'s /mcp), the MCP HTTP bridge (`agent_mcp.http`), the
Lambda handler (`agent_mcp.lambda_handler`) and the Pulumi program
(`infra.mcp_function`) each import these; none restates them (docs/decisions.md,
"Issue 24: the MCP server and its Lambda").
"""

from __future__ import annotations

from typing import Final

#: Where the live MCP server answers, locally and behind the CDN.
MCP_PATH: Final = "/mcp"

#: The origin custom header CloudFront adds to every request it sends to the MCP
#: function URL, and that the Lambda handler checks (in constant time) before anything
#: else. Lowercase, as a function URL event's header names are; not on CloudFront's list
#: of headers it cannot add (infra.mcp_function.check_origin_header checks it).
ORIGIN_VERIFY_HEADER: Final = "x-origin-verify"

#: The Lambda environment variable holding that header's secret value (set by the
#: Pulumi program, read by the handler).
ORIGIN_SECRET_ENV: Final = "MCP_ORIGIN_SECRET"

#: The folder beside the handler's packages the handler reads published files from when
#: no bucket is named (BUCKET_ENV unset: tests, a function-URL emulator; URL path /x ->
#: site/x). The deployed function packages none: it reads the bucket (issue 25).
PACKAGED_SITE_FOLDER: Final = "site"

#: The largest MCP request body, in bytes, on every path: `serve` refuses a larger
#: Content-Length with 413 before reading a byte of the body (and before 100 Continue),
#: the Lambda handler refuses a larger declared or delivered body with 413 before
#: decoding it, and the SDK's own limit is set to the same number.
#:
#: Why 1 MiB and not the Lambda's 6 MB: a BUFFERED function URL invokes the function
#: synchronously, and "For synchronous invocations, the maximum payload size is 6 MB"
#: (Lambda API reference, Invoke), but that payload is the *event*: the body inside a
#: JSON string (base64 when binary), next to the headers and the request context. JSON
#: escaping can triple a valid JSON body (non-ASCII as \\uXXXX) and base64 adds a third;
#: the headers and URL are at most 20,480 bytes (CloudFront quota). At 1 MiB every valid
#: body reaches the function whatever its bytes, so the limit here is the limit there:
#: one number, true on both. An MCP request here is one tool call with one short string
#: argument, far below it. Sources: docs/decisions.md.
MCP_MAX_BODY: Final = 1024 * 1024

#: The Lambda environment variable naming the bucket the function reads the published
#: files from (set by the Pulumi program, read by the handler): the function packages
#: no content (issue 25).
BUCKET_ENV: Final = "MCP_BUCKET"

#: Where clients look for the live server's MCP Server Card (SEP-2127, media type
#: SERVER_CARD_MEDIA): the location the extension reserves, `<streamable-http-url>/
#: server-card`, and the well-known one clients and crawlers in the field request. The
#: MCP Catalog (the extension's site-wide entry point) names the first. Answered by the
#: server itself wherever it runs (`serve`, the Lambda behind the CDN), so a card exists
#: exactly when a server does. Sources: docs/decisions.md, issue 25's section ("The
#: server card").
#: The card's path below the streamable-HTTP endpoint (a discovery document names
#: `<endpoint>` + this).
SERVER_CARD_SUFFIX: Final = "/server-card"
SERVER_CARD_PATH: Final = MCP_PATH + SERVER_CARD_SUFFIX
SERVER_CARD_WELL_KNOWN: Final = "/.well-known/mcp/server-card.json"
MCP_CATALOG_PATH: Final = "/.well-known/mcp/catalog.json"
SERVER_CARD_PATHS: Final = (SERVER_CARD_PATH, SERVER_CARD_WELL_KNOWN, MCP_CATALOG_PATH)
SERVER_CARD_MEDIA: Final = "application/mcp-server-card+json"
