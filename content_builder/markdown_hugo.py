"""What a Hugo content tree means by its files (docs/site-data-format.md, Markdown).

A tree is a Hugo one when it is the site's `content/` folder (or a language's folder in
it, `content/en`) and the site's config (`hugo.toml`, `.yaml`, `.yml`, `.json`, or the
older `config.*`) sits in the folder holding `content/`. Then, as Hugo publishes it:

- a page's URL is its path with Hugo's defaults: pretty URLs (`/section/page/`) and
  lower case (`disablePathToLower: false`); front matter `url` (a path from the site's
  root) replaces it and `slug` its last part;
- a link by URL path (`/methods/resource/resourcetype/`) leads to the page published
  there, and a relative link that names no page from the page's folder is looked up
  from the content root, as Hugo's link render hook does (`.Page.GetPage`);
- a page Hugo does not render is not published: `build: {render: never}` (or `link`,
  or the older `render: false`, `_build`, `headless: true`), its own or cascaded
  (`cascade`, a map or a list of maps) from a branch's `_index.md` to it and everything
  below it, or from the site config's `cascade` to every page, as hugoDocs' `_common/`
  snippets are. A cascade map with a `target` (`_target` before Hugo 0.156) applies to
  the pages it matches: `path` (a glob over the page's logical path), `kind`, `lang`
  (or `sites: {matrix: {languages}}`), `environment` (a build is `production`). The
  closest branch's cascade wins, then the config's; within a list, the first map that
  sets the option. Sources: Hugo's documentation, "Build options", "Front matter:
  cascade", "Configure cascade", glossary "logical path" and "page matcher".

The config is read for its `cascade`, `defaultContentLanguage`, `languages` and
`taxonomies` alone: a site whose `baseURL` has a path, whose `uglyURLs` or
`disablePathToLower` is set, sets `docs_url` / `docs_url_style` in site.yaml. Source:
Hugo's documentation, "URL management" and "Page.GetPage".
"""

from __future__ import annotations

import json
import os
import posixpath
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from content_builder.errors import SiteDataError
from content_builder.site_files import read_site_file
from content_builder.yaml_io import read_yaml_mapping

_CONFIG_EXTENSIONS = ("toml", "yaml", "yml", "json")
_CONFIG_NAMES = tuple(f"{name}.{ext}" for name in ("hugo", "config") for ext in _CONFIG_EXTENSIONS)


def is_hugo(root: Path) -> bool:
    """Whether the tree at `root` is a Hugo site's content (or one language's of it)."""
    return bool(config_files(root))


def config_files(root: Path) -> list[Path]:
    """The site config files beside the Hugo content tree `root` (or the content tree
    above one language's), in the order `site_config` reads them (a later one's keys
    win): the configuration directory's `_default` then `production` files, then the
    project's own config file ("Configure Hugo", Configuration directory). What `serve
    --watch` watches besides the tree, since a cascade there decides which pages are
    published."""
    for content in (root, root.parent):
        if content.name == "content":
            project = content.parent
            found = [
                path
                for environment in _CONFIG_ENVIRONMENTS
                for path in _config_dir_files(project / "config" / environment)
            ]
            own = [project / name for name in _CONFIG_NAMES if os.path.isfile(project / name)]
            found += own[:1]  # hugo.toml before config.toml: the first found is read
            if found:
                return found
    return []


#: The configuration directory's environments a build reads: `_default`, then the
#: build's own (`hugo` builds for production; glossary, "environment").
_CONFIG_ENVIRONMENTS = ("_default", "production")
#: The files of a configuration directory read: the whole config, and the root keys
#: `_site` uses (`params.toml`, `menus.en.toml` and the rest are not: nothing here needs
#: them, and each is up to 1 MiB to parse).
_CONFIG_STEMS = frozenset({"hugo", "config", "cascade", "languages", "taxonomies"})
_CONFIG_FILE_PARTS = frozenset((stem, ext) for stem in _CONFIG_STEMS for ext in _CONFIG_EXTENSIONS)


def _config_dir_files(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:  # no such folder (most sites)
        return []
    return [
        folder / name
        for name in names
        if name.rpartition(".")[::2] in _CONFIG_FILE_PARTS and os.path.isfile(folder / name)
    ]


def url_path(default: str, front: dict[str, Any]) -> str:
    """The page's path on the site, no leading slash, from its `default` (the path in
    the tree's URL style)."""
    url = front.get("url")
    if isinstance(url, str) and url.strip() and " " not in url:
        return url.lstrip("/")
    slug = front.get("slug")
    if isinstance(slug, str) and slug.strip() and " " not in slug and default:
        folder, _, last = default.rstrip("/").rpartition("/")
        trailing = "/" if default.endswith("/") else ""
        default = posixpath.join(folder, slug) + trailing if last else default
    return default.lower()


#: The most maps one `cascade` (the config's, or a branch's) may hold: each page walks
#: every map above it, so 10,000 maps cost 5 s per 100 pages (session 28's review); real
#: sites write a handful (hugoDocs: 12). More is a warning, and that cascade is not applied.
MAX_CASCADE_MAPS = 100
#: A build is `hugo` (production); `hugo server` is development (glossary, "environment").
ENVIRONMENT = "production"
#: Hugo's taxonomies when the config names none (Configure taxonomies).
_DEFAULT_TAXONOMIES = ("tags", "categories")


@dataclass(frozen=True)
class Site:
    """What the site config says of its pages' build options and matching."""

    cascade: list[dict[str, Any]] = field(default_factory=list)  # the config's cascade maps
    language: str = "en"  # defaultContentLanguage
    languages: frozenset[str] = frozenset({"en"})
    taxonomies: frozenset[str] = frozenset(_DEFAULT_TAXONOMIES)


def site_config(root: Path) -> tuple[Site, tuple[Path, str] | None]:
    """The config of the Hugo site whose content tree is `root`, and (its file, why) when
    it could not be read: then Hugo's defaults, no config cascade (a warning: Hugo itself
    would refuse the config, and this build read none before)."""
    config: dict[str, Any] = {}
    cascade_from: Path | None = None  # the file whose cascade is the config's: a warning names it
    for path in config_files(root):
        try:
            read = _read_config(path)
        # RecursionError: nested past json's or tomllib's recursion limit.
        except (SiteDataError, ValueError, RecursionError) as error:
            reason = error.problems[0].message if isinstance(error, SiteDataError) else error
            return Site(), (path, f"not read ({reason}): its cascade is not applied")
        stem = path.name.rsplit(".", 1)[0]
        if path.parent.parent.name != "config" or stem in ("hugo", "config"):
            config.update(read)  # the whole config
            cascade_from = path if "cascade" in read else cascade_from
        else:  # `languages.toml`: one root key
            config[stem] = read
            cascade_from = path if stem == "cascade" else cascade_from
    try:
        return _site(config), None
    except ValueError as error:  # only a cascade of too many maps: read from a file
        return Site(), (cascade_from or root, f"not read ({error}): its cascade is not applied")


def _read_config(path: Path) -> dict[str, Any]:
    if path.suffix in (".yaml", ".yml"):
        return read_yaml_mapping(path, str(path))
    text = read_site_file(path, str(path)).decode("utf-8")
    found = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if not isinstance(found, dict):
        raise ValueError("expected a mapping")
    return found


def _site(config: dict[str, Any]) -> Site:
    language = str(config.get("defaultContentLanguage") or "en").lower()
    languages = config.get("languages")
    taxonomies = config.get("taxonomies")
    known = (
        [language, *(str(key).lower() for key in languages)] if isinstance(languages, dict) else []
    )
    plurals = taxonomies.values() if isinstance(taxonomies, dict) else _DEFAULT_TAXONOMIES
    cascade = _maps(config.get("cascade"))
    if len(cascade) > MAX_CASCADE_MAPS:
        raise ValueError(_too_many(len(cascade)))
    return Site(
        cascade=cascade,
        language=language,
        languages=frozenset(known or [language]),
        taxonomies=frozenset(str(plural).lower() for plural in plurals),
    )


def _maps(cascade: Any) -> list[dict[str, Any]]:
    """A `cascade` value as its list of maps (a map alone is a list of one)."""
    entries = cascade if isinstance(cascade, list) else [cascade]
    return [entry for entry in entries if isinstance(entry, dict)]


def _too_many(count: int) -> str:
    return f"a cascade of {count:,} maps, over {MAX_CASCADE_MAPS}"


def rendered_pages(
    root: Path, pages: list[tuple[str, dict[str, Any]]], site: Site
) -> tuple[list[bool], list[tuple[str, str]]]:
    """Whether Hugo renders each page (`rel`: posix, within the content tree `root`;
    its front matter), in order: its own build options, else the closest branch's
    cascaded ones that target it, else the site config's; and (rel, why) of each branch
    whose cascade is not applied."""
    lang_folder = root.name.lower() if root.name != "content" else None
    branches = {}
    unapplied = []
    for rel, front in pages:
        if _base(rel) == "_index" and front.get("cascade") is not None:
            maps = _maps(front["cascade"])
            if len(maps) > MAX_CASCADE_MAPS:
                unapplied.append((rel, f"{_too_many(len(maps))}: not applied"))
                continue
            branches[posixpath.dirname(rel)] = maps
    matched: dict[str, dict[str, str]] = {}  # each page's logical path, kind, language
    matchers: dict[str, Callable[[str], bool]] = {}  # this call's compiled globs

    def matches(pattern: Any, value: str) -> bool:
        if not isinstance(pattern, str):
            return False
        if pattern not in matchers:
            try:
                matchers[pattern] = _glob(pattern)
            except Exception:  # wcmatch's PatternLimitException (not exported):
                # braces expanding past 1,000 patterns (`{a,b}` x 30). Such a target is
                # matched by no page: the cascade is not applied.
                matchers[pattern] = lambda _value: False
        return matchers[pattern](value)

    def targets(entry: dict[str, Any], rel: str) -> bool:
        target = entry.get("target", entry.get("_target"))
        if target is None:
            return True
        if not isinstance(target, dict):
            return False
        if rel not in matched:
            matched[rel] = _matched_as(rel, lang_folder, site)
        page = matched[rel]
        criteria = [(key, pattern) for key, pattern in target.items() if key != "sites"]
        if "sites" in target:  # Hugo 0.153: a sites matrix; its languages alone are known
            sites = target["sites"]
            matrix = sites.get("matrix") if isinstance(sites, dict) else None
            if not (isinstance(matrix, dict) and set(sites) == {"matrix"}
                    and set(matrix) <= {"languages"}):  # fmt: skip
                return False  # versions, roles: not applied
            criteria += [("lang", pattern) for pattern in matrix.values()]
        # A criterion not known here (a newer Hugo's) matches nothing: not applied.
        return all(key in page and matches(pattern, page[key]) for key, pattern in criteria)

    found = []
    for rel, front in pages:
        found.append(_rendered(rel, front, branches, site, lambda entry, r=rel: targets(entry, r)))
    return found, unapplied


def _glob(pattern: str) -> Callable[[str], bool]:
    """Hugo's glob pattern (gobwas/glob, `/` the separator) as a matcher: `**` crosses
    folders, `*` does not, `{a,b}` either; Hugo lowers the case of pattern and value
    alike. wcmatch's `**` is a whole part of a path: `/a**` is `/a*` and `/a/**/b`
    matches `/a/b`, which Hugo's do not (no real cascade writes either)."""
    # Imported here: 10 ms a build that has no cascade target would pay (the sample's
    # whole build is 0.3 s).
    from wcmatch import glob

    flags = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.IGNORECASE
    return glob.compile(pattern, flags=flags).match


def _rendered(
    rel: str,
    front: dict[str, Any],
    branches: dict[str, list[dict[str, Any]]],
    site: Site,
    targets: Callable[[dict[str, Any]], bool],
) -> bool:
    if front.get("headless") is True:
        return False
    own = _build_render(front)
    if own is not None:
        return own
    folder = posixpath.dirname(rel)  # a branch's cascade reaches its own `_index.md` too
    while True:
        for entry in branches.get(folder, ()):
            inherited = _build_render(entry)
            if inherited is not None and targets(entry):
                return inherited
        if not folder:
            break
        folder = posixpath.dirname(folder)
    for entry in site.cascade:
        inherited = _build_render(entry)
        if inherited is not None and targets(entry):
            return inherited
    return True


def _matched_as(rel: str, lang_folder: str | None, site: Site) -> dict[str, str]:
    """What a page matcher matches of the page at `rel`: its logical path (the path in
    the content tree without extension and language, lower case, spaces as hyphens, a
    branch or leaf bundle its folder), its kind, language and the build's environment."""
    folder, name = posixpath.split(rel)
    parts = name.split(".")[:-1] or [name]  # without the extension
    language = lang_folder or site.language
    if len(parts) > 1 and parts[-1].lower() in site.languages:
        language = parts.pop().lower()  # `about.de.md`
    base = ".".join(parts)
    path = folder if base in ("_index", "index") else posixpath.join(folder, base)
    path = "/" + path.lower().replace(" ", "-")
    if base != "_index":
        kind = "page"
    elif not folder:
        kind = "home"
    elif folder.split("/")[0].lower() in site.taxonomies:
        kind = "taxonomy" if "/" not in folder else "term"
    else:
        kind = "section"
    return {"path": path, "kind": kind, "lang": language, "environment": ENVIRONMENT}


def _base(rel: str) -> str:
    return posixpath.basename(rel).split(".", 1)[0]


def _build_render(front: dict[str, Any]) -> bool | None:
    """`build.render` (or `_build`'s) as whether the page is written: None when unset."""
    options = front.get("build", front.get("_build"))
    if not isinstance(options, dict) or "render" not in options:
        return None
    render = options["render"]
    if isinstance(render, bool):  # before Hugo 0.76: render = false
        return render
    return str(render).lower() not in ("never", "link", "false")
