"""What text site data may hold (issue 24, docs/security.md).

Every published field reaches llms.txt, llms-full.txt and the Markdown twins as it is
(JSON escapes it, text does not). So:

- no control character in any field: C0 but tab and newline, DEL, C1 (NEL too), and no
  bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069), which make text
  read differently from what it holds (a terminal, an editor, a reviewer of the pull
  request), nor a Unicode tag character (U+E0000-U+E007F), which shows as nothing in an
  editor or a diff but is read by a language model as the ASCII letter it shadows;
- a one-line field (a title, a name, a description, a keyword, an id, a URL) holds no
  line break of any kind and no tab: it is written inside a line (`## {title}`,
  `- [{title}](url): {description}`), where a newline would start a line of its own.

Both are refused when the file is read, naming the file and the field: nothing an
author wrote is changed silently.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from content_builder.errors import Problem

#: Characters no field may hold (tab and newline are the only C0 characters allowed).
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
)
#: What breaks a line for some reader (str.splitlines' separators), and the tab: not in a
#: one-line field.
LINE_BREAK = re.compile("[\t\n\x0b\x0c\r\x1c-\x1e\x85\u2028\u2029]")
#: What YAML can turn into a forbidden character: one of them written as it is (the
#: parser refuses the other C0 and C1 characters), or a double-quoted scalar's escape of
#: one (`\0 \a \b \e \f \r \v \N`, `\xXX`, `\uXXXX`, `\UXXXXXXXX`); the other escapes
#: and a backslash anywhere else (a shell line continuation in a code example) cannot.
_RAW_FORBIDDEN = re.compile("[\x85\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
_ESCAPED_FORBIDDEN = re.compile(r"\\[0abefrvNxuU]")


def _may_hold_forbidden(text: str) -> bool:
    # str.isascii and `in` are C loops; a regex scan of every file's text was 45 us a
    # file (0.09 s of loading 1,000 entries).
    if not text.isascii() and _RAW_FORBIDDEN.search(text):
        return True
    return "\\" in text and _ESCAPED_FORBIDDEN.search(text) is not None


def describe(character: str) -> str:
    """`U+001B (escape)`: a character that cannot be shown as it is."""
    name = unicodedata.name(character, "")
    if not name:
        name = {"\n": "newline", "\t": "tab", "\r": "carriage return"}.get(character, "control")
    return f"U+{ord(character):04X} ({name.lower()})"


def shown(text: str) -> str:
    """A key or a location, safe to print on one line of a terminal."""
    if FORBIDDEN.search(text) or LINE_BREAK.search(text):
        return text.encode("unicode_escape").decode("ascii")
    return text


def forbidden_problems(text: str, data: Any, display: str) -> list[Problem]:
    """Every string (value or key) of a file's data that holds a forbidden character.
    `text` is the file's text: without a backslash or one of them as it is, no string
    can hold one, and the data is not walked (nearly every file)."""
    if not _may_hold_forbidden(text):
        return []
    found: list[Problem] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, location = stack.pop()
        if isinstance(value, str):
            match = FORBIDDEN.search(value)
            if match is not None:
                found.append(
                    Problem(
                        display,
                        location or None,
                        f"holds {describe(match.group())} at position {match.start() + 1}: "
                        "control characters, bidirectional overrides and invisible tag "
                        "characters are not allowed in site data (they reach llms.txt and "
                        "the Markdown twins as they are)",
                    )
                )
        elif isinstance(value, dict):
            for key, item in value.items():
                child = f"{location}.{shown(str(key))}" if location else shown(str(key))
                if isinstance(key, str) and FORBIDDEN.search(key):
                    stack.append((key, child))
                else:
                    stack.append((item, child))
        elif isinstance(value, list):
            stack.extend((item, f"{location}[{index}]") for index, item in enumerate(value))
    found.reverse()  # in the order of the file
    return found


def require_one_line(value: str) -> str:
    """A one-line field: no line break, no tab (pydantic AfterValidator)."""
    match = LINE_BREAK.search(value)
    if match is not None:
        raise ValueError(
            f"a one-line field may not hold {describe(match.group())}: it is written inside "
            "a line of llms.txt, llms-full.txt and the Markdown twins (a title, a link, a "
            "heading), where a line break would start lines of its own; write it on one line"
        )
    return value
