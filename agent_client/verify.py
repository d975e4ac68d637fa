"""`python -m content_builder verify BASE_URL [--expect-from DIR]`: check a live deployment.

Starts where an agent starts (llms.txt at `/`, then the discovery document) and walks
every interface with the agent client, checking what the spec and our header policy
promise: status, media type and Cache-Control per route rule, exactly one
`Access-Control-Allow-Origin: *` (with and without `Origin`, on a 404 and on a
preflight too: the CDN behaviours only a live request can prove), conditional GET,
bodies valid against the models, every internal link resolving, MCP enums resolving,
content hashes matching a recomputation, and a search that finds something. With
`--expect-from DIR` every file must also match the local build byte for byte.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit
from xml.etree import ElementTree

import yaml
from pydantic import ValidationError

from agent_client.client import USER_AGENT, AgentClient, ClientError, Fetched, rank
from agent_contract import links, paths
from agent_contract.directives import (
    MARKDOWN_TOKENS_HEADER,
    answer_links,
    estimated_tokens,
    json_twin,
)
from agent_contract.endpoints import model_for
from agent_contract.hashing import content_hash
from agent_contract.manifest import MANIFEST_NAME, read_manifest
from agent_contract.mcp_endpoint import MCP_PATH
from agent_contract.models import (
    ContentDocument,
    ContentIndex,
    DiscoveryDocument,
    ErrorResponse,
    LegacySkillsIndex,
    McpManifest,
    SearchIndex,
    SkillsIndex,
)
from agent_contract.routes import HEADER_POLICY, NoRouteRule, rule_for

_PROBE_ORIGIN = "https://agent.example"
_MISSING_PATH = "/api/v1/verify-probe-does-not-exist.json"
RETRY_INTERVAL = 10.0  # seconds between attempts with --retry-for


@dataclass(frozen=True)
class Finding:
    ok: bool
    subject: str
    message: str


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)

    def check(self, ok: bool, subject: str, message: str) -> bool:
        self.findings.append(Finding(ok, subject, message))
        return ok

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    def render(self, verbose: bool = False) -> str:
        lines = [
            f"{'ok  ' if f.ok else 'FAIL'} {f.subject}: {f.message}"
            for f in self.findings
            if verbose or not f.ok
        ]
        subjects = {f.subject for f in self.findings}
        lines.append(
            f"verify: {len(self.findings)} checks on {len(subjects)} subjects, "
            f"{len(self.failures)} failed"
        )
        return "\n".join(lines)


class Verifier:
    def __init__(self, base_url: str, expect_from: Path | None = None, timeout: float = 10.0):
        self.client = AgentClient(base_url, timeout=timeout)
        self.base_url = self.client.base_url
        self.expect_from = expect_from
        self.report = Report()
        self.bodies: dict[str, bytes] = {}  # path -> body of every file checked

    def path_of(self, url: str) -> str | None:
        parts = urlsplit(url)
        origin = urlsplit(self.base_url)
        if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
            return None
        return parts.path

    # --- single-file checks ------------------------------------------------------------

    def request(
        self, url: str, subject: str, method: str = "GET", headers: dict[str, str] | None = None
    ) -> Fetched | None:
        """One request; a timeout, refused or reset connection, or a broken answer is a
        failed check naming the URL (and `--retry-for` tries again), never a traceback."""
        try:
            return self.client.request(url, method=method, headers=headers)
        except ClientError as error:
            self.report.check(False, subject, f"{method} {error}")
        except (OSError, http.client.HTTPException, ValueError) as error:
            self.report.check(False, subject, f"{method} {url}: {type(error).__name__}: {error}")
        return None

    def _cors_once(
        self, subject: str, response: Fetched, context: str, expose: bool = True
    ) -> None:
        values = response.headers.get("access-control-allow-origin", [])
        self.report.check(
            values == ["*"],
            subject,
            f"Access-Control-Allow-Origin {context}: expected exactly one '*', got {values}",
        )
        self.report.check(
            "access-control-allow-credentials" not in response.headers,
            subject,
            f"no Access-Control-Allow-Credentials {context}",
        )
        if not expose:  # a preflight answer's body is never read: nothing to expose
            return
        exposed = ",".join(response.headers.get("access-control-expose-headers", []))
        self.report.check(
            "etag" in {name.strip().lower() for name in exposed.split(",")},
            subject,
            f"Access-Control-Expose-Headers {context} includes ETag (got {exposed!r})",
        )

    def check_file(self, path: str) -> bytes | None:
        if path in self.bodies:
            return self.bodies[path]
        url = self.base_url + path
        response = self.request(url, path)
        if response is None:
            return None
        if not self.report.check(response.status == 200, path, f"status {response.status}"):
            return None
        self.bodies[path] = response.body
        try:
            rule = rule_for(path)
        except NoRouteRule as error:
            self.report.check(False, path, str(error))
            return response.body
        self.report.check(
            response.header("Content-Type") == rule.media_type,
            path,
            f"Content-Type {response.header('Content-Type')!r}, expected {rule.media_type!r}",
        )
        self.report.check(
            response.header("Cache-Control") == rule.cache_control,
            path,
            f"Cache-Control {response.header('Cache-Control')!r}, expected {rule.cache_control!r}",
        )
        self._cors_once(path, response, "without Origin")
        for name, expected in HEADER_POLICY.security.items():
            actual = response.header(name)
            # The stack option hstsPreload may add `; preload` at the CDN.
            ok = actual == expected or (
                name == "Strict-Transport-Security" and actual == expected + "; preload"
            )
            self.report.check(ok, path, f"{name} {actual!r}")
        markdown = json_twin(path) is not None
        self._check_agent_headers(path, path, response, markdown)
        self._check_body(path, response.body)
        return response.body

    def _check_agent_headers(
        self, subject: str, path: str, response: Fetched, markdown: bool
    ) -> None:
        """The `Link` an answer carries (exactly the links agent_contract/directives.py
        names for it, in any order) and, on a Markdown answer, its token estimate."""
        discovery_path = self.client.discovery_path or ""
        expected = answer_links(discovery_path, path, markdown, response.status).split(", ")
        # RFC 8288: one Link header may carry several links, comma-separated; several
        # Link headers are one list too (RFC 9110 5.3).
        sent = ", ".join(response.headers.get("link", [])).split(", ")
        self.report.check(
            sorted(sent) == sorted(expected), subject, f"Link {sent!r}, expected {expected!r}"
        )
        if markdown and response.status == 200 and response.body:
            tokens = response.header(MARKDOWN_TOKENS_HEADER)
            wanted = str(estimated_tokens(len(response.body)))
            self.report.check(
                tokens == wanted, subject, f"{MARKDOWN_TOKENS_HEADER} {tokens!r}, expected {wanted}"
            )

    def _check_negotiated(self, entry_path: str) -> None:
        """`Accept: text/markdown` on an entry's JSON URL: the Markdown, naming its JSON."""
        subject = f"{entry_path} (Accept: text/markdown)"
        answer = self.request(
            self.base_url + entry_path, subject, headers={"Accept": "text/markdown"}
        )
        if answer is None:
            return
        twin = paths.markdown_twin(entry_path)
        self.report.check(
            answer.status == 200 and answer.body == self.bodies.get(twin or "", b"\0"),
            subject,
            "answers with the Markdown twin",
        )
        self._check_agent_headers(subject, entry_path, answer, markdown=True)

    def _check_body(self, path: str, body: bytes) -> None:
        if path.endswith((".txt", ".md", ".xml")):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                self.report.check(False, path, "not UTF-8 text")
                return
            self.report.check(bool(text.strip()), path, "text, not empty")
            if json_twin(path) is not None:  # an entry's Markdown twin (not SKILL.md)
                pointer = self.base_url + paths.LLMS_TXT
                self.report.check(
                    pointer in text.split("\n", 1)[0], path, f"first line points to {pointer}"
                )
            elif path == paths.SITEMAP:
                self._check_sitemap(path, text)
            return
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
            self.report.check(False, path, f"not JSON: {error}")
            return
        model = model_for(path, self.client.discovery_path or "")
        if path == paths.OPENAPI:
            self.report.check(
                str(data.get("openapi", "")).startswith("3.1"), path, "an OpenAPI 3.1 document"
            )
        elif model is not None:
            try:
                model.model_validate(data)
                self.report.check(True, path, f"valid {model.__name__}")
            except ValidationError as error:
                self.report.check(False, path, f"invalid {model.__name__}: {error}")
        if model is ContentDocument and isinstance(data, dict):
            stated = data.get("metadata", {}).get("content_hash")
            self.report.check(
                stated == content_hash(data),
                path,
                f"metadata.content_hash {stated} matches a recomputation",
            )

    def _entry_urls(self, discovery: DiscoveryDocument) -> list[str]:
        """Every document's and FAQ entry's api_url: the discovery document's maps while
        they list every entry (a small site), else the content index's."""
        content = discovery.content
        listed = [*content.documents.values(), *content.faq.values()]
        if len(listed) == content.total_documents + content.total_faq:
            return listed
        body = self.check_file(paths.CONTENT_INDEX)
        if body is None:
            return listed
        index = ContentIndex.model_validate_json(body)
        self.report.check(
            len(index.documents) == content.total_documents + content.total_faq,
            paths.CONTENT_INDEX,
            "lists as many entries as the discovery document counts",
        )
        return [str(entry.api_url) for entry in index.documents]

    def _expand(self, templates: list[str]) -> list[str]:
        """Each template's URLs, one per value of its parameter's enum in the OpenAPI
        document (llms.txt's parts are listed nowhere else on a small site)."""
        body = self.check_file(paths.OPENAPI)
        try:
            operations = json.loads(body or b"{}").get("paths", {})
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            return []  # check_file reported it
        urls = []
        for template in templates:
            path = self.path_of(template) or ""
            parameters = operations.get(path, {}).get("get", {}).get("parameters", [])
            if not self.report.check(bool(parameters), template, "OpenAPI enumerates it"):
                continue
            name = parameters[0]["name"]
            for value in parameters[0].get("schema", {}).get("enum", []):
                urls.append(self.base_url + path.replace("{" + name + "}", str(value)))
        return urls

    def _check_sitemap(self, path: str, text: str) -> None:
        """Well-formed, a sitemaps.org urlset, every <loc> a file of this deployment."""
        namespace = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
        try:
            root = ElementTree.fromstring(text)
        except ElementTree.ParseError as error:
            self.report.check(False, path, f"not well-formed XML: {error}")
            return
        self.report.check(root.tag == namespace + "urlset", path, "a sitemaps.org urlset")
        for loc in root.iter(namespace + "loc"):
            target = self.path_of(loc.text or "")
            if self.report.check(target is not None, path, f"<loc> {loc.text} is on this site"):
                self.check_file(target)  # type: ignore[arg-type]

    # --- the walk ------------------------------------------------------------------------

    def run(self) -> Report:
        try:
            discovery_path = self.client.find_discovery_path()
        except (ClientError, OSError, http.client.HTTPException, ValueError) as error:
            reason = (
                str(error)
                if isinstance(error, ClientError)
                else f"{self.base_url}{paths.LLMS_TXT}: {type(error).__name__}: {error}"
            )
            self.report.check(
                False, paths.LLMS_TXT, f"cannot find the discovery document: {reason}"
            )
            return self.report
        self.check_root()
        discovery_body = self.check_file(discovery_path)
        if discovery_body is None:
            return self.report
        try:
            discovery = DiscoveryDocument.model_validate_json(discovery_body)
        except ValidationError:  # check_file reported why; nothing else can be walked
            self.report.check(False, discovery_path, "a discovery document to walk")
            return self.report
        entry_urls = self._entry_urls(discovery)
        interface_urls = [
            *discovery.interfaces.model_dump(exclude_none=True).values(),
            *entry_urls,
        ]
        # A template (the Markdown mirrors) stands for one file per entry: each twin.
        twins = [paths.markdown_twin(self.path_of(url) or "") for url in entry_urls]
        # The twins' templates are checked through each entry's twin above, whether or
        # not the OpenAPI enumerates the ids (it does not past ID_LIST_LIMIT).
        entry_templates = {
            self.base_url + template
            for template in (paths.DOCUMENT_MARKDOWN_TEMPLATE, paths.FAQ_MARKDOWN_TEMPLATE)
        }
        templates = [url for url in interface_urls if "{" in url and url not in entry_templates]
        interface_urls = [url for url in interface_urls if "{" not in url]
        interface_urls += [self.base_url + twin for twin in twins if twin]
        interface_urls += self._expand(templates)
        for url in interface_urls:
            path = self.path_of(url)
            if self.report.check(path is not None, url, "interface URL is on this deployment"):
                self.check_file(path)  # type: ignore[arg-type]
        entry_paths = [self.path_of(url) for url in entry_urls]
        if entry_paths and entry_paths[0]:
            self._check_negotiated(entry_paths[0])
        self.check_links()
        self.check_mcp_enums()
        self.check_search()
        self.check_skills()
        self.check_edge_behaviour(discovery_path)
        if self.expect_from is not None:
            self.check_expected(self.expect_from)
        return self.report

    def check_root(self) -> None:
        root = self.request(self.base_url + "/", "/")
        llms = self.request(self.base_url + paths.LLMS_TXT, paths.LLMS_TXT)
        if root is not None and llms is not None:
            self.report.check(
                root.status == 200 and root.body == llms.body, "/", "GET / answers with llms.txt"
            )

    def _links_in(self, bodies: Iterable[bytes]) -> set[str]:
        found = {
            path
            for body in bodies
            for path in links.api_paths(body.decode("utf-8", errors="replace"), self.base_url)
        }
        return {path for path in found if "{" not in path} - links.NON_FILE_PATHS

    def check_links(self) -> None:
        checked: set[str] = set()
        while True:
            pending = self._links_in(self.bodies.values()) - checked
            if not pending:
                return
            for path in sorted(pending):
                checked.add(path)
                self.check_file(path)

    def check_mcp_enums(self) -> None:
        body = self.bodies.get(paths.MCP_MANIFEST)
        if body is None:
            return
        manifest = McpManifest.model_validate_json(body)
        for tool in manifest.tools:
            url = tool.endpoint.removeprefix("GET ")
            for name, prop in tool.inputSchema.properties.items():
                for value in prop.get("enum", []):
                    path = self.path_of(url.replace("{" + name + "}", value))
                    subject = f"mcp {tool.name}({name}={value})"
                    if self.report.check(path is not None, subject, "resolves on this deployment"):
                        self.report.check(
                            self.check_file(path) is not None,  # type: ignore[arg-type]
                            subject,
                            f"enum value resolves to {path}",
                        )

    def check_search(self) -> None:
        index_body = self.bodies.get(paths.SEARCH_INDEX)
        if index_body is None:
            return
        index = SearchIndex.model_validate_json(index_body)
        if not self.report.check(bool(index.entries), paths.SEARCH_INDEX, "has entries"):
            return
        for entry in index.entries[:3]:
            hits = [hit.id for hit in rank(index, entry.title)[:3]]
            self.report.check(
                entry.id in hits,
                paths.SEARCH_INDEX,
                f"searching {entry.title!r} ranks {entry.id} in the top 3 (got {hits})",
            )

    def check_skills(self) -> None:
        """The Agent Skills discovery RFC: each v0.2.0 skill's `url`, resolved against the
        index URL (RFC 3986), serves bytes whose sha256 is its `digest` (clients "MUST NOT
        use unverified content") and whose front matter has its name and description;
        v0.1.0's index lists the same skills, and each file it lists serves those bytes."""
        index_url = self.base_url + paths.SKILLS_INDEX
        try:
            index = SkillsIndex.model_validate_json(self.check_file(paths.SKILLS_INDEX) or b"")
            legacy = LegacySkillsIndex.model_validate_json(
                self.check_file(paths.SKILLS_INDEX_V0_1) or b""
            )
        except ValidationError:
            return  # check_file reported the body
        artifacts: dict[str, bytes] = {}
        for skill in index.skills:
            subject = f"{paths.SKILLS_INDEX} skill {skill.name}"
            url = urljoin(index_url, skill.url)
            path = self.path_of(url)
            body = self.check_file(path) if path is not None else None
            if body is None:
                self.report.check(False, subject, f"url {url} is served here")
                continue
            artifacts[skill.name] = body
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            self.report.check(
                digest == skill.digest, subject, f"digest {skill.digest}, served {digest}"
            )
            meta = _front_matter(body)
            self.report.check(
                meta.get("name") == skill.name and meta.get("description") == skill.description,
                subject,
                "name and description match SKILL.md's front matter",
            )
        described = {skill.name: skill.description for skill in index.skills}
        self.report.check(
            {skill.name: skill.description for skill in legacy.skills} == described,
            paths.SKILLS_INDEX_V0_1,
            f"lists the skills of {paths.SKILLS_INDEX}",
        )
        for skill in legacy.skills:
            for file in skill.files:
                path = paths.skill_v0_1_file(skill.name, file)
                body = self.check_file(path)  # reports its status, headers and text
                if file == "SKILL.md" and body is not None:
                    self.report.check(
                        body == artifacts.get(skill.name),
                        path,
                        f"the same bytes as the SKILL.md {paths.SKILLS_INDEX} pins",
                    )

    def check_edge_behaviour(self, discovery_path: str) -> None:
        url = self.base_url + discovery_path
        with_origin = self.request(url, discovery_path, headers={"Origin": _PROBE_ORIGIN})
        if with_origin is not None:
            self._cors_once(discovery_path, with_origin, "with Origin")
            tag = with_origin.header("ETag")
            if self.report.check(tag is not None, discovery_path, "has an ETag"):
                for origin in (None, _PROBE_ORIGIN):
                    headers = {"If-None-Match": tag or ""}
                    if origin:
                        headers["Origin"] = origin
                    again = self.request(url, discovery_path, headers=headers)
                    if again is None:
                        continue
                    context = "on a 304 " + ("with Origin" if origin else "without Origin")
                    self.report.check(
                        again.status == 304, discovery_path, f"If-None-Match -> {again.status}"
                    )
                    # RFC 9110 15.4.5: a 304 does not describe a body it does not send.
                    self.report.check(
                        again.header("Content-Type") is None,
                        discovery_path,
                        f"no Content-Type {context} (got {again.header('Content-Type')!r})",
                    )
                    self._cors_once(discovery_path, again, context)

        query = self.request(self.base_url + paths.LLMS_TXT + "?cache-buster=1", paths.LLMS_TXT)
        if query is not None:
            self.report.check(
                query.status == 200 and query.body == self.bodies.get(paths.LLMS_TXT, query.body),
                paths.LLMS_TXT,
                "a query string is ignored",
            )

        for origin in (None, _PROBE_ORIGIN):
            missing = self.request(
                self.base_url + _MISSING_PATH,
                _MISSING_PATH,
                headers={"Origin": origin} if origin else {},
            )
            if missing is None:
                continue
            context = "on a 404 " + ("with Origin" if origin else "without Origin")
            self.report.check(missing.status == 404, _MISSING_PATH, f"status {missing.status}")
            self._cors_once(_MISSING_PATH, missing, context)
            self._check_agent_headers(_MISSING_PATH, _MISSING_PATH, missing, markdown=False)
            try:
                ErrorResponse.model_validate_json(missing.body)
                self.report.check(True, _MISSING_PATH, "404 body is the JSON error document")
            except ValidationError as error:
                self.report.check(
                    False, _MISSING_PATH, f"404 body is not an ErrorResponse: {error}"
                )

        subject = "OPTIONS " + discovery_path
        preflight = self.request(
            url,
            subject,
            method="OPTIONS",
            headers={"Origin": _PROBE_ORIGIN, "Access-Control-Request-Method": "GET"},
        )
        if preflight is None:
            return
        self.report.check(200 <= preflight.status < 300, subject, f"status {preflight.status}")
        self._cors_once(subject, preflight, "on a preflight", expose=False)
        allowed = preflight.header("Access-Control-Allow-Methods") or ""
        self.report.check("GET" in allowed, subject, f"allows GET (got {allowed!r})")

    def check_expected(self, folder: Path) -> None:
        manifest = read_manifest(folder)
        if manifest is None:
            problem = "missing, unreadable or not a build manifest"
            self.report.check(False, str(folder), f"cannot read {MANIFEST_NAME}: {problem}")
            return
        self.report.check(
            manifest.get("base_url") == self.base_url,
            str(folder),
            f"built for {manifest.get('base_url')}, verifying {self.base_url}",
        )
        for path, expected in manifest["files"].items():
            body = self.check_file(path)
            if body is None:
                continue
            digest = hashlib.sha256(body).hexdigest()
            self.report.check(
                digest == expected["sha256"],
                path,
                "matches the local build" if digest == expected["sha256"]
                else f"differs from the local build (sha256 {digest[:12]}…, "
                f"expected {expected['sha256'][:12]}…)",
            )  # fmt: skip


def _front_matter(body: bytes) -> dict[str, object]:
    """A SKILL.md's YAML front matter (between its opening `---` lines), else empty."""
    text = body.decode("utf-8", errors="replace").replace("\r\n", "\n")
    head, fence, _ = text.removeprefix("---\n").partition("\n---\n")
    if not text.startswith("---\n") or not fence:
        return {}
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


#: The MCP request that tells a live server from anything else at its path: `initialize`,
#: which every MCP server answers first (the 2025-06-18 revision, Lifecycle).
_PROTOCOL_VERSION = "2025-06-18"
_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": _PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "agent-access-verify", "version": "1"},
        },
    }
).encode("utf-8")


#: The most of an answer to `initialize` the probe reads: an answer is a few hundred bytes.
_PROBE_MAX_BYTES = 1 << 20


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is no MCP server at the path: urllib would repeat the POST as a GET,
    which a server may answer with a stream it holds open."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def live_mcp_endpoint(
    base_url: str, timeout: float = 10.0, clock: Callable[[], float] = time.monotonic
) -> str | None:
    """The deployment's own MCP endpoint (`base_url` + MCP_PATH) when a live MCP server
    answers an `initialize` there, else None: what its discovery document, architecture
    and Agent Skill name (a deployment with its MCP function, `serve` with the `mcp`
    extra), so that `verify --site` builds what that deployment should serve.

    Read as it comes, until the answer, for at most twice `timeout` in all, headers
    included: a server SHOULD (not must) close its event stream after the response (the
    2025-06-18 revision, Transports), and one that keeps it open with pings would
    otherwise hold `verify` for ever."""
    endpoint = base_url.rstrip("/") + MCP_PATH
    request = urllib.request.Request(
        endpoint,
        data=_INITIALIZE,
        method="POST",
        headers={
            "User-Agent": USER_AGENT,
            "Content-Type": "application/json",
            # Streamable HTTP: a client accepts both (the 2025-06-18 revision, Transports).
            "Accept": "application/json, text/event-stream",
        },
    )
    # The socket's timeout bounds each read, not the exchange: a server sending its
    # headers a byte at a time, each within it, would hold the probe for hours. Read in
    # a daemon thread, given up on after the body's deadline and one read more (at most
    # twice `timeout`); one given up on ends with the process.
    found: list[bool] = []
    reader = threading.Thread(
        target=lambda: _answers_initialize(request, timeout, clock, found),
        name="mcp-probe",
        daemon=True,
    )
    reader.start()
    reader.join(2 * timeout)
    return endpoint if found and found[0] else None


def _answers_initialize(
    request: urllib.request.Request,
    timeout: float,
    clock: Callable[[], float],
    found: list[bool],
) -> None:
    """Put in `found` whether the server answers `request` (initialize) with a result
    naming itself, read as the bytes come until the answer, `timeout` passed or
    _PROBE_MAX_BYTES: before the session is ended, so a server slow to answer the DELETE
    is not taken for none when the caller stops waiting."""
    deadline = clock() + timeout
    received = bytearray()
    session: str | None = None
    answer: dict[str, Any] | None = None
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=timeout) as response:
            if response.status != 200:
                found.append(False)
                return
            session = response.headers.get(_SESSION_HEADER)
            media_type = (response.headers.get("Content-Type") or "").lower()
            event_stream = media_type.startswith("text/event-stream")
            while clock() < deadline and len(received) < _PROBE_MAX_BYTES:
                chunk = response.read1(65536)
                if not chunk:
                    break
                received += chunk
                if event_stream:
                    answer = _initialize_answer(received, event_stream)
                    if answer is not None:
                        break
            if not event_stream:  # a JSON answer: whole once its body ends
                answer = _initialize_answer(received, event_stream)
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
        answer = None
    result = answer.get("result") if answer is not None else None
    found.append(isinstance(result, dict) and "serverInfo" in result)
    if session is not None:
        _end_session(request.full_url, session, result, timeout)


#: The header a stateful server names its session by (2025-06-18, Transports, Session
#: Management).
_SESSION_HEADER = "Mcp-Session-Id"


def _end_session(endpoint: str, session: str, result: Any, timeout: float) -> None:
    """The session the probe opened ended: "Clients that no longer need a particular
    session ... SHOULD send an HTTP DELETE to the MCP endpoint with the Mcp-Session-Id
    header" (2025-06-18, Transports, Session Management), with the protocol version
    `result` (initialize's) negotiated, as on every request after `initialize`
    (Transports, Protocol Version Header). A server may refuse it (405): nothing is left
    to do either way."""
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if not (isinstance(version, str) and version.isprintable()):
        version = _PROTOCOL_VERSION
    request = urllib.request.Request(
        endpoint,
        method="DELETE",
        headers={
            "User-Agent": USER_AGENT,
            _SESSION_HEADER: session,
            "MCP-Protocol-Version": version,
        },
    )
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=timeout):
            pass
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
        pass


def _initialize_answer(received: bytes | bytearray, event_stream: bool) -> dict[str, Any] | None:
    """The answer to `initialize` (id 1), None while none has come. A JSON answer, or an
    event stream whose events may come before the answer: a notification (Transports,
    "The server MAY send JSON-RPC requests and notifications before sending the JSON-RPC
    response"), a priming event with empty data (SEP-1699)."""
    text = bytes(received).decode("utf-8", "replace")
    for message in _event_data(text) if event_stream else [text]:
        try:
            answer = json.loads(message)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            continue
        if isinstance(answer, dict) and answer.get("id") == 1 and "method" not in answer:
            return answer
    return None


def _event_data(text: str) -> list[str]:
    """Each event's data in an event stream (HTML Living Standard, 9.2.6): its `data`
    lines joined by newlines; an event with empty data is not one. Lines end at CR, LF
    or CRLF only (not at str.splitlines' other breaks, which JSON strings may hold)."""
    events: list[str] = []
    data: list[str] = []
    for line in [*re.split(r"\r\n|\r|\n", text), ""]:
        if not line:
            if "".join(data):
                events.append("\n".join(data))
            data = []
        elif line == "data" or line.startswith("data:"):
            value = line[len("data:") :]
            data.append(value[1:] if value.startswith(" ") else value)
    return events


def verify(
    base_url: str,
    expect_from: Path | None = None,
    timeout: float = 10.0,
    retry_for: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    expected: Callable[[], Path | None] | None = None,
) -> Report:
    """One verification; with `retry_for`, repeat until it passes or the time is up (right
    after a publish the CDN may serve old copies until its invalidation completes).
    `expected`, asked again before each attempt, names the files to expect in place of
    `expect_from`: what a deployment should serve may change meanwhile (its MCP server
    starts answering: `verify --site`). The time starts after the first `expected`: a
    first build of a large site is no time the deployment had to catch up in."""
    folder = expected() if expected is not None else expect_from
    deadline = clock() + retry_for
    while True:
        report = Verifier(base_url, folder, timeout).run()
        if not report.failures or clock() >= deadline:
            return report
        sleep(RETRY_INTERVAL)
        folder = expected() if expected is not None else expect_from
