"""Bad site data fails cleanly: exit 1, the file and field named, nothing written.

Every case edits a copy of site_data/ *after* a good build, then builds again into the
same output folder: the output and content.lock.json must stay byte-for-byte as they
were, and stderr must be `error: <file>: field '<field>': <message>` lines, never a
traceback. The hypothesis tests feed random YAML to the loader and accept only a
Site or a SiteDataError that names the file.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from content_builder.errors import SiteDataError
from content_builder.loaded import Site
from content_builder.loader import load_site
from tests.conftest import SPEC_SITE, run_cli, tree_digest

LOCK = "content.lock.json"
FAQ = "faq/q03-protection.yaml"
PAGE = "content/compatibility.yaml"
FEATURE = "content/how-it-works.yaml"
AGENT = "on-site-agent.yaml"
SITE = "site.yaml"


# --- helpers -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reported:
    """One `error: <file>: [field '<field>': ]<message>` line of stderr."""

    file: Path
    field: str | None
    message: str


def parse_errors(err: str, cwd: Path | None = None) -> list[Reported]:
    """Every stderr line must be an `error:` line; the file is resolved against `cwd`."""
    cwd = cwd or Path.cwd()
    reported = []
    for line in err.splitlines():
        assert line.startswith("error: "), f"unexpected stderr line: {line!r}"
        file, _, rest = line.removeprefix("error: ").partition(": ")
        field = None
        if rest.startswith("field '"):
            field, _, rest = rest.removeprefix("field '").partition("': ")
        path = Path(file)
        reported.append(Reported(path if path.is_absolute() else cwd / path, field, rest))
    return reported


def same_file(reported: Path, expected: Path) -> bool:
    return reported.resolve() == expected.resolve()


def assert_reported(
    err: str,
    site: Path,
    file: str,
    field: str | None,
    fragments: tuple[str, ...],
    cwd: Path | None = None,
) -> None:
    """stderr has an error line naming `site/file` (and `field`) whose message has `fragments`."""
    assert "Traceback" not in err
    assert err.strip(), "no error printed"
    problems = parse_errors(err, cwd)
    expected = site / file
    matching = [
        problem
        for problem in problems
        if same_file(problem.file, expected)
        and (field is None or problem.field == field)
        and all(fragment in problem.message for fragment in fragments)
    ]
    assert matching, f"no error for {file} field {field!r} containing {fragments}; stderr:\n{err}"
    # The path as printed ends with the file's own name (relative or absolute).
    assert str(matching[0].file).endswith(Path(file).name)


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def dump(path: Path, data: Any) -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**6)
    # __VALUE__ writes VALUE unquoted, as an author types it (yes, 1.2).
    text = re.sub(r"'?__(.+?)__'?", r"\1", text)
    path.write_text(text, encoding="utf-8")


def edit_yaml(file: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(site: Path) -> None:
        data = load(site / file)
        change(data)
        dump(site / file, data)

    return apply


def edit_text(file: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(site: Path) -> None:
        text = (site / file).read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {file}"
        (site / file).write_text(text.replace(old, new, 1), encoding="utf-8")

    return apply


def setter(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data[key] = value

    return change


def deleter(key: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        assert key in data
        del data[key]

    return change


def rename_key(old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        # Keep the key's position, like a typo made in place.
        items = [(new if key == old else key, value) for key, value in data.items()]
        data.clear()
        data.update(items)

    return change


def set_retention_days(data: dict[str, Any]) -> None:
    data["configuration"]["telemetry"]["retention_days"] = "thirty"


def set_sections(data: dict[str, Any]) -> None:
    data["content"]["sections"] = "text"


def blank_section_title(data: dict[str, Any]) -> None:
    data["content"]["sections"][0]["title"] = ""


def copy_faq(site: Path) -> None:
    shutil.copyfile(site / "faq/q01-difference.yaml", site / "faq/q07-copy.yaml")


# --- the cases -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    edit: Callable[[Path], None]
    file: str  # the edited file, relative to the site folder
    field: str | None  # the field the error must name, None when no field is involved
    fragments: tuple[str, ...] = ()  # text the message must contain


CASES = {
    "faq-invalid-yaml-unclosed-bracket": Case(
        edit_text(FAQ, "question: How are", "question: [How are"),
        FAQ,
        None,
        ("invalid YAML", "line"),
    ),
    "faq-invalid-yaml-bad-indentation": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\n   extra: indented\n"),
        FAQ,
        None,
        ("invalid YAML", "line 2"),
    ),
    # yaml's converters raise ValueError/KeyError on an explicit tag they cannot apply:
    # once a traceback, now an error naming the file.
    "faq-tag-that-cannot-convert": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\nx: !!float many\n"),
        FAQ,
        None,
        ("invalid YAML", "!!tag", "many"),
    ),
    "faq-bool-tag-before-a-duplicate-key": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\nx: !!bool maybe\nx: 1\n"),
        FAQ,
        None,
        ("invalid YAML",),
    ),
    "faq-missing-question": Case(
        edit_yaml(FAQ, deleter("question")), FAQ, "question", ("required field is missing",)
    ),
    "document-missing-title": Case(
        edit_yaml(PAGE, deleter("title")), PAGE, "title", ("required field is missing",)
    ),
    "document-order-not-int": Case(
        edit_yaml(PAGE, setter("order", "first")), PAGE, "order", ("'first'",)
    ),
    "page-sections-not-list": Case(
        edit_yaml(PAGE, set_sections), PAGE, "content.sections", ("list",)
    ),
    "page-section-title-empty": Case(
        edit_yaml(PAGE, blank_section_title),
        PAGE,
        "content.sections[0].title",
        ("non-empty",),
    ),
    "agent-retention-days-not-int": Case(
        edit_yaml(AGENT, set_retention_days),
        AGENT,
        "configuration.telemetry.retention_days",
        ("'thirty'",),
    ),
    "document-unknown-content-type": Case(
        edit_yaml(FEATURE, setter("content_type", "blog")), FEATURE, "content_type", ("'blog'",)
    ),
    "faq-duplicate-id": Case(
        copy_faq, "faq/q07-copy.yaml", "id", ("duplicate id", "'q01-difference'")
    ),
    "faq-id-with-slash": Case(edit_yaml(FAQ, setter("id", "../etc")), FAQ, "id", ("'../etc'",)),
    "faq-id-with-dots": Case(edit_yaml(FAQ, setter("id", "a..b")), FAQ, "id", ("'a..b'",)),
    "document-relative-canonical-url": Case(
        edit_yaml(PAGE, setter("canonical_url", "/pricing")),
        PAGE,
        "canonical_url",
        ("absolute", "'/pricing'"),
    ),
    "site-relative-website": Case(
        edit_yaml(SITE, setter("website", "www.example.com")),
        SITE,
        "website",
        ("absolute", "'www.example.com'"),
    ),
    "faq-empty-question": Case(
        edit_yaml(FAQ, setter("question", "")), FAQ, "question", ("non-empty",)
    ),
    "faq-blank-question": Case(
        edit_yaml(FAQ, setter("question", "   ")), FAQ, "question", ("non-empty",)
    ),
    "document-unknown-field": Case(
        edit_yaml(PAGE, rename_key("title", "tittle")), PAGE, "tittle", ("unknown field",)
    ),
    "faq-dangling-link": Case(
        edit_yaml(FAQ, setter("answer", "Read {base_url}/api/v1/content/nope.json first.")),
        FAQ,
        "answer",
        ("nope.json", "does not resolve", "(line "),
    ),
    "faq-duplicate-key": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\nquestion: Twice?\n"),
        FAQ,
        None,
        ("duplicate key", "'question'"),
    ),
    # --- issue 10: each of these was a traceback, shipped, or said too little ---
    "faq-impossible-date": Case(
        edit_text(FAQ, "question: How are", "question: 2025-02-30\nx_question: How are"),
        FAQ,
        "question",
        ("date", 'quote it: "2025-02-30"', "(line 2)"),
    ),
    "document-impossible-time": Case(
        edit_text(PAGE, "title:", "title: 2025-01-01 25:00:00\nx_title:"),
        PAGE,
        "title",
        ('quote it: "2025-01-01 25:00:00"',),
    ),
    "faq-unknown-field-has-its-line": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\nx: 1\n"),
        FAQ,
        "x",
        ("unknown field", "(line 2)"),
    ),
    "faq-answer-unquoted-yes": Case(
        edit_yaml(FAQ, setter("answer", "__yes__")), FAQ, "answer", ('quote it: "yes"', "line")
    ),
    "document-version-unquoted-number": Case(
        edit_yaml(PAGE, setter("version", "__1.2__")), PAGE, "version", ('quote it: "1.2"',)
    ),
    "faq-managed-updated-at": Case(
        edit_yaml(FAQ, setter("updated_at", "2026-01-01T00:00:00Z")),
        FAQ,
        "updated_at",
        ("managed by content.lock.json", "remove it"),
    ),
    "document-managed-metadata": Case(
        edit_yaml(PAGE, setter("metadata", {"content_version": "1.0.0"})),
        PAGE,
        "metadata",
        ("managed by the build",),
    ),
    "faq-tab-indentation": Case(
        edit_text(FAQ, "id: q03-protection\n", "id: q03-protection\n\tkeywords: [a]\n"),
        FAQ,
        None,
        ("tab", "line 2"),
    ),
    "faq-token-misspelt": Case(
        edit_yaml(FAQ, setter("answer", "Read {baseurl}/api/v1/faq/q01-difference.json.")),
        FAQ,
        "answer",
        ("unknown token {baseurl}", "did you mean {base_url}?"),
    ),
    "faq-token-without-slash": Case(
        edit_yaml(FAQ, setter("answer", "Read {base_url}api/v1/faq/q01-difference.json.")),
        FAQ,
        "answer",
        ("{base_url}/", "slash"),
    ),
    "faq-link-pasted-from-make-serve": Case(
        edit_yaml(FAQ, setter("answer", "Read http://127.0.0.1:8000/api/v1/content/site.json")),
        FAQ,
        "answer",
        ("local server", "{base_url}"),
    ),
    "faq-link-to-localhost": Case(
        edit_yaml(FAQ, setter("answer", "Read http://localhost:8000/llms.txt now.")),
        FAQ,
        "answer",
        ("local server",),
    ),
    "faq-http-link-to-own-host": Case(
        edit_yaml(FAQ, setter("answer", "Read http://agents.parlance.example/llms.txt now.")),
        FAQ,
        "answer",
        ("over http", "{base_url}"),
    ),
    # --- found by review after issue 10: each of these shipped ---
    "faq-token-with-a-doubled-slash": Case(
        edit_yaml(FAQ, setter("answer", "Read {base_url}//api/v1/content/site.json now.")),
        FAQ,
        "answer",
        ("{base_url}/", "one slash"),
    ),
    "faq-token-misspelt-with-a-hyphen": Case(
        edit_yaml(FAQ, setter("answer", "Read {base-url}/llms.txt now.")),
        FAQ,
        "answer",
        ("unknown token {base-url}", "did you mean {base_url}?"),
    ),
    "faq-link-to-ipv6-loopback": Case(
        edit_yaml(FAQ, setter("answer", "Read http://[::1]:8000/llms.txt now.")),
        FAQ,
        "answer",
        ("local server",),
    ),
    "faq-link-to-another-loopback-address": Case(
        edit_yaml(FAQ, setter("answer", "Read http://127.0.0.2:8000/llms.txt now.")),
        FAQ,
        "answer",
        ("local server",),
    ),
    "faq-http-link-to-own-host-in-capitals": Case(
        edit_yaml(FAQ, setter("answer", "Read HTTP://AGENTS.PARLANCE.EXAMPLE/llms.txt now.")),
        FAQ,
        "answer",
        ("over http", "{base_url}"),
    ),
    "faq-literal-base-url-in-capitals": Case(
        edit_yaml(FAQ, setter("answer", "Read HTTPS://AGENTS.PARLANCE.EXAMPLE/api/v1/x.json")),
        FAQ,
        "answer",
        ("write {base_url} instead of the literal",),
    ),
    "site-contact-not-an-address": Case(
        edit_yaml(SITE, setter("contact", "agents at parlance")),
        SITE,
        "contact",
        ("e-mail address", "URL", "'agents at parlance'"),
    ),
    "site-contact-half-an-address": Case(
        edit_yaml(SITE, setter("contact", "agents@parlance")), SITE, "contact", ("e-mail",)
    ),
    "document-token-unquoted-at-start": Case(
        edit_text(PAGE, "title:", "title: {name} rules\nx_title:"),
        PAGE,
        None,
        ("invalid YAML", "must be quoted"),
    ),
}


@dataclass(frozen=True)
class Built:
    site: Path
    dist: Path
    digest: dict[str, str]
    lock: bytes


@pytest.fixture
def built_copy(site_copy: Path, tmp_path: Path) -> Built:
    """A site copy built once, successfully, into tmp_path/dist."""
    dist = tmp_path / "dist"
    result = run_cli("build", "--site", site_copy, "--out", dist)
    assert result.code == 0, result.err
    assert (dist / "manifest.json").is_file()
    return Built(site_copy, dist, tree_digest(dist), (site_copy / LOCK).read_bytes())


def assert_untouched(built: Built) -> None:
    assert tree_digest(built.dist) == built.digest
    assert (built.site / LOCK).read_bytes() == built.lock
    # Nothing next to dist but the spare the first build left (writer.py).
    assert sorted(p.name for p in built.dist.parent.iterdir()) == [
        ".dist.spare",
        "dist",
        "site_data",
    ]


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_build_rejects_bad_input(built_copy: Built, case: Case) -> None:
    case.edit(built_copy.site)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1, result.out
    assert_reported(result.err, built_copy.site, case.file, case.field, case.fragments)
    assert_untouched(built_copy)


def test_duplicate_id_names_both_files(built_copy: Built) -> None:
    copy_faq(built_copy.site)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    (problem,) = parse_errors(result.err)
    assert same_file(problem.file, built_copy.site / "faq/q07-copy.yaml")
    assert "'q01-difference'" in problem.message
    assert "q01-difference.yaml" in problem.message
    assert_untouched(built_copy)


def test_every_problem_is_reported_in_one_run(built_copy: Built) -> None:
    CASES["faq-missing-question"].edit(built_copy.site)
    CASES["document-order-not-int"].edit(built_copy.site)
    CASES["agent-retention-days-not-int"].edit(built_copy.site)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    named = {problem.file.resolve() for problem in parse_errors(result.err)}
    assert named == {(built_copy.site / file).resolve() for file in (FAQ, PAGE, AGENT)}
    assert_untouched(built_copy)


@pytest.mark.parametrize("base_url", ["ftp://x", "not a url", "https://x.example?q=1"])
def test_bad_base_url(built_copy: Built, base_url: str) -> None:
    result = run_cli(
        "build", "--site", built_copy.site, "--out", built_copy.dist, "--base-url", base_url
    )
    assert result.code == 1
    assert "Traceback" not in result.err
    assert result.err.startswith("error: --base-url: ")
    assert_untouched(built_copy)


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_check_rejects_bad_input_and_writes_nothing(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths, as a user types them
    case.edit(site_copy)
    before = tree_digest(tmp_path)
    result = run_cli("check", "--site", "site_data")
    assert result.code == 1, result.out
    assert_reported(result.err, site_copy, case.file, case.field, case.fragments, cwd=tmp_path)
    assert not Path(result.err.splitlines()[0].removeprefix("error: ")).is_absolute()
    assert tree_digest(tmp_path) == before
    assert not (tmp_path / "dist").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site_data"]


# --- bugs found while writing these tests, fixed since ----------------------------------


def test_recursive_alias_is_a_clean_error(built_copy: Built) -> None:
    (built_copy.site / FAQ).write_text(
        "id: q03-protection\nquestion: &q [*q]\nanswer: Yes.\n", encoding="utf-8"
    )
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    assert_reported(result.err, built_copy.site, FAQ, None, ())
    assert_untouched(built_copy)


def test_unparsable_base_url_is_a_clean_error(built_copy: Built) -> None:
    result = run_cli(
        "build", "--site", built_copy.site, "--out", built_copy.dist, "--base-url", "http://[::1"
    )
    assert result.code == 1
    assert result.err.startswith("error: --base-url: ")
    assert_untouched(built_copy)


def test_base_url_with_path_names_base_url(built_copy: Built) -> None:
    result = run_cli(
        "build",
        "--site",
        built_copy.site,
        "--out",
        built_copy.dist,
        "--base-url",
        "https://x.example/sub",
    )
    assert result.code == 1
    assert_untouched(built_copy)
    assert result.err.startswith("error: --base-url: ")


def test_reserved_document_id_names_the_file(built_copy: Built) -> None:
    data = load(built_copy.site / PAGE)
    data["id"] = "index"
    dump(built_copy.site / "content/reserved.yaml", data)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    assert_untouched(built_copy)
    assert_reported(result.err, built_copy.site, "content/reserved.yaml", "id", ())


@pytest.mark.parametrize("bad", ["http://x:abc", "https://a b", "https://x.example/sub?q"])
def test_malformed_base_urls_are_refused(built_copy: Built, bad: str) -> None:
    result = run_cli(
        "build", "--site", built_copy.site, "--out", built_copy.dist, "--base-url", bad
    )
    assert result.code == 1
    assert result.err.startswith("error: --base-url: ")
    assert_untouched(built_copy)


def test_brand_mcp_is_reserved(built_copy: Built) -> None:
    data = load(built_copy.site / "site.yaml")
    data["brand"] = "mcp"
    dump(built_copy.site / "site.yaml", data)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    assert_reported(result.err, built_copy.site, "site.yaml", "brand", ("reserved",))
    assert_untouched(built_copy)


@pytest.mark.parametrize(
    ("snippet", "kind"), [("tags: !!set {a, b}", "set"), ("tags: [2024-01-01]", "date")]
)
def test_yaml_values_without_a_stable_text_form_are_refused(
    built_copy: Built, snippet: str, kind: str
) -> None:
    path = built_copy.site / FAQ
    path.write_text(path.read_text(encoding="utf-8") + snippet + "\n", encoding="utf-8")
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    assert_reported(result.err, built_copy.site, FAQ, None, (kind,))
    assert_untouched(built_copy)


# --- hypothesis: random YAML never crashes the loader --------------------------------

FUZZ_TARGETS = [FAQ, FEATURE]
KEEP = {"content": "site.yaml", "faq": "q01-difference.yaml"}  # `site` is required


def first_items_only(value: Any) -> Any:
    if isinstance(value, list):
        return [first_items_only(value[0])] if value else []
    if isinstance(value, dict):
        return {key: first_items_only(item) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def fuzz_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per target, a trimmed site copy: the target plus one sibling in content/ and faq/,
    and architecture.yaml and on-site-agent.yaml with every list cut to its first item.

    load_site does not check links, so the rest of the site only costs parse time
    (PyYAML's pure-Python parser: a full copy would triple the run time).
    """
    sites = {}
    for target in FUZZ_TARGETS:
        site = tmp_path_factory.mktemp("fuzz") / "site_data"
        shutil.copytree(SPEC_SITE, site)
        for folder, keep in KEEP.items():
            for path in (site / folder).glob("*.yaml"):
                if path.name != keep and path != site / target:
                    path.unlink()
        for name in ("architecture.yaml", AGENT):
            dump(site / name, first_items_only(load(site / name)))
        assert isinstance(load_site(site), Site)  # the trimmed copy itself is valid
        sites[target] = site
    return sites


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.sampled_from(["page", "faq", "feature", "product", "q01-difference", "compatibility"]),
    st.sampled_from(
        ["https://x.example", "{base_url}/api/v1/faq/q01-difference.json", "{base_url}/x.json"]
    ),
)
nested = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


def key_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (dict keys and list indexes) to a value inside `value`."""
    items: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    paths = []
    for key, item in items:
        paths.append((*prefix, key))
        paths.extend(key_paths(item, (*prefix, key)))
    return paths


def replaced(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    result = copy.deepcopy(data)
    holder: Any = result
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return result


def random_text(original: dict[str, Any]) -> st.SearchStrategy[str]:
    return st.text()


def random_dump(original: dict[str, Any]) -> st.SearchStrategy[str]:
    keys = st.sampled_from(sorted(original)) | st.text()
    data = nested | st.dictionaries(keys, nested, max_size=6)
    return data.map(lambda value: yaml.safe_dump(value, allow_unicode=True))


def random_mutation(original: dict[str, Any]) -> st.SearchStrategy[str]:
    paths = key_paths(original)
    top = [path for path in paths if len(path) == 1]
    # Half the draws replace a top-level key, so every field gets its share.
    path = st.sampled_from(top) | st.sampled_from(paths)
    return st.builds(replaced, st.just(original), path, nested).map(
        lambda value: yaml.safe_dump(value, allow_unicode=True, sort_keys=False)
    )


STRATEGIES = {"text": random_text, "dump": random_dump, "mutation": random_mutation}
ORIGINALS = {target: load(SPEC_SITE / target) for target in FUZZ_TARGETS}


@pytest.mark.parametrize("kind", STRATEGIES)
@pytest.mark.parametrize("target", FUZZ_TARGETS)
@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_yaml_loads_or_fails_cleanly(
    fuzz_sites: dict[str, Path], target: str, kind: str, data: st.DataObject
) -> None:
    site = fuzz_sites[target]
    text = data.draw(STRATEGIES[kind](ORIGINALS[target]), label="file text")
    # surrogatepass: a lone surrogate becomes bytes that are not UTF-8, a case of its own.
    (site / target).write_bytes(text.encode("utf-8", errors="surrogatepass"))
    try:
        result = load_site(site)
    except SiteDataError as error:
        event("SiteDataError")
        assert error.problems
        assert Path(target).name in str(error)
    else:
        event("loaded")
        assert isinstance(result, Site)


# --- messages say it once, and where ------------------------------------------------


def test_no_message_repeats_the_value(built_copy: Built) -> None:
    CASES["document-relative-canonical-url"].edit(built_copy.site)
    CASES["site-relative-website"].edit(built_copy.site)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1
    for problem in parse_errors(result.err):
        for value in ("'/pricing'", "'www.example.com'"):
            assert problem.message.count(value) <= 1, problem.message


def test_an_impossible_date_is_a_site_data_error_not_a_crash(site_copy: Path) -> None:
    # serve --watch rebuilds with plan() and keeps watching on a SiteDataError; a
    # ValueError from the YAML date constructor used to escape it and kill the watcher.
    from content_builder.build import plan

    path = site_copy / FAQ
    path.write_text(
        path.read_text("utf-8").replace("question: How are", "question: 2025-02-30\nx: ")
    )
    with pytest.raises(SiteDataError) as raised:
        plan(site_copy)
    assert "2025-02-30" in str(raised.value)


# --- content.lock.json: validated, and a merge conflict loses nothing ---------------


def edit_lock(site: Path, entry_id: str, field: str, value: object) -> None:
    data = json.loads((site / LOCK).read_text("utf-8"))
    data["entries"][entry_id][field] = value
    (site / LOCK).write_text(json.dumps(data, indent=2) + "\n", "utf-8")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("updated_at", "25 Nov 2026", "UTC timestamp"),
        ("updated_at", "2026-02-30T10:00:00Z", "not a real time"),
        ("updated_at", "2026-11-25T25:00:00Z", "not a real time"),
        ("content_version", "one", "MAJOR.MINOR.PATCH"),
        ("content_version", 1, "expected text"),
        ("source_hash", "abc", "sha256"),
    ],
)
def test_a_bad_lock_entry_is_refused_by_name(
    built_copy: Built, field: str, value: object, fragment: str
) -> None:
    edit_lock(built_copy.site, "q03-protection", field, value)
    built = Built(built_copy.site, built_copy.dist, built_copy.digest,
                  (built_copy.site / LOCK).read_bytes())  # fmt: skip
    check = run_cli("check", "--frozen", "--site", built_copy.site)
    build = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    for result in (check, build):
        assert result.code == 1
        assert_reported(result.err, built_copy.site, LOCK, f"entries.q03-protection.{field}",
                        (fragment,))  # fmt: skip
    assert_untouched(built)


def _conflicted_lock(site: Path, ours: dict, theirs: dict) -> None:
    """content.lock.json as git leaves it when two branches changed the same entries."""
    ours_text = json.dumps(ours, indent=2).splitlines()
    theirs_text = json.dumps(theirs, indent=2).splitlines()
    # One conflict hunk around the entries that differ: the whole body, for simplicity.
    lines = ["<<<<<<< HEAD", *ours_text, "=======", *theirs_text, ">>>>>>> other-branch"]
    (site / LOCK).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_merge_conflict_in_the_lock_is_merged_keeping_the_newest_of_each_entry(
    site_copy: Path, tmp_path: Path
) -> None:
    original = json.loads((site_copy / LOCK).read_text("utf-8"))
    ours = json.loads(json.dumps(original))
    theirs = json.loads(json.dumps(original))
    # Both branches edited q01 in the past; ours bumped it further. Theirs bumped q02.
    ours["entries"]["q01-difference"].update(content_version="1.0.7",
                                             updated_at="2030-01-02T00:00:00Z")  # fmt: skip
    theirs["entries"]["q01-difference"].update(content_version="1.0.5",
                                               updated_at="2030-01-01T00:00:00Z")  # fmt: skip
    theirs["entries"]["q02-endpoints"].update(content_version="2.1.0",
                                              updated_at="2030-02-01T00:00:00Z")  # fmt: skip
    _conflicted_lock(site_copy, ours, theirs)

    frozen = run_cli("check", "--frozen", "--site", site_copy)
    assert frozen.code == 1, "a committed lock with conflict markers is not shippable"
    assert "merge conflict" in frozen.err and "build" in frozen.err

    result = run_cli("build", "--site", site_copy, "--out", tmp_path / "dist")
    assert result.code == 0, result.err
    merged = json.loads((site_copy / LOCK).read_text("utf-8"))  # no markers left
    assert merged["entries"]["q01-difference"]["content_version"] == "1.0.7"
    assert merged["entries"]["q02-endpoints"]["content_version"] == "2.1.0"
    assert merged["entries"]["q02-endpoints"]["updated_at"] == "2030-02-01T00:00:00Z"
    for entry_id, entry in original["entries"].items():
        if entry_id not in ("q01-difference", "q02-endpoints"):
            assert merged["entries"][entry_id] == entry, "untouched entries keep their dates"
    assert run_cli("check", "--frozen", "--site", site_copy).code == 0


def test_an_unparsable_conflict_side_says_how_to_recover(site_copy: Path) -> None:
    (site_copy / LOCK).write_text("<<<<<<< HEAD\n{\n=======\n}\n>>>>>>> b\n", encoding="utf-8")
    result = run_cli("check", "--site", site_copy)
    assert result.code == 1
    assert_reported(result.err, site_copy, LOCK, None, ("not valid JSON", "git checkout"))


def test_diff3_conflict_markers_are_merged_too(site_copy: Path, tmp_path: Path) -> None:
    original = json.loads((site_copy / LOCK).read_text("utf-8"))
    theirs = json.loads(json.dumps(original))
    theirs["entries"]["q05-insights"]["content_version"] = "3.0.0"
    body = json.dumps(original, indent=2).splitlines()
    other = json.dumps(theirs, indent=2).splitlines()
    # git's merge.conflictStyle=diff3 adds the common ancestor between ||||||| and =======.
    lines = ["<<<<<<< HEAD", *body, "||||||| base", *body, "=======", *other, ">>>>>>> b"]
    (site_copy / LOCK).write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("build", "--site", site_copy, "--out", tmp_path / "dist")
    assert result.code == 0, result.err
    merged = json.loads((site_copy / LOCK).read_text("utf-8"))
    assert merged["entries"]["q05-insights"]["content_version"] == "3.0.0"


def test_a_real_git_merge_conflict_in_the_lock_is_merged(site_copy: Path, tmp_path: Path) -> None:
    """The lock as `git merge` leaves it: partial hunks inside the JSON."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(site_copy), *args], check=False, capture_output=True)

    def bump(entry_id: str, version: str, stamp: str) -> None:
        edit_lock(site_copy, entry_id, "content_version", version)
        edit_lock(site_copy, entry_id, "updated_at", stamp)
        git("commit", "-qam", f"bump {entry_id}")

    git("init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@t")):
        git("config", key, value)
    git("add", "-A")
    git("commit", "-qm", "start")
    git("checkout", "-q", "-b", "other")
    bump("q01-difference", "1.0.4", "2030-01-01T00:00:00Z")
    git("checkout", "-q", "main")
    bump("q01-difference", "1.0.9", "2030-02-01T00:00:00Z")
    git("merge", "-q", "other")
    text = (site_copy / LOCK).read_text("utf-8")
    assert "<<<<<<<" in text, "git left a conflict in the lock"

    result = run_cli("build", "--site", site_copy, "--out", tmp_path / "dist")
    assert result.code == 0, result.err
    merged = json.loads((site_copy / LOCK).read_text("utf-8"))
    assert merged["entries"]["q01-difference"] == {
        **merged["entries"]["q01-difference"],
        "content_version": "1.0.9",
        "updated_at": "2030-02-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    ("file", "old", "new", "field", "advice"),
    [
        # A managed field: quoting it would only lead to a second error, so say why it goes.
        (FAQ, "question: How are", "updated_at: 2025-02-30\nquestion: How are", "updated_at",
         "managed by content.lock.json"),
        # A number field: quoting a date cannot make it a number.
        (PAGE, "order: 50", "order: 2025-02-30", "order", "integer"),
    ],
    ids=["managed-field", "number-field"],
)  # fmt: skip
def test_an_unquoted_date_gets_the_advice_its_field_needs(
    built_copy: Built, file: str, old: str, new: str, field: str, advice: str
) -> None:
    edit_text(file, old, new)(built_copy.site)
    result = run_cli("build", "--site", built_copy.site, "--out", built_copy.dist)
    assert result.code == 1, result.out
    (problem,) = [p for p in parse_errors(result.err) if p.field == field]
    assert advice in problem.message and "quote it" not in problem.message, problem.message
    assert_untouched(built_copy)
