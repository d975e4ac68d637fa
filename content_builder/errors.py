"""The one error type the builder reports to users: a file, a field, what was expected."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    file: str
    field: str | None
    message: str

    def __str__(self) -> str:
        # Imported here: text_rules imports this module for Problem.
        from content_builder.text_rules import shown

        where = f"{self.file}: field '{self.field}'" if self.field else self.file
        # One terminal line, whatever a file's name holds: a name is author input (a
        # pull request adds it), and an ESC sequence or a newline in it must not reach
        # the developer's terminal as it is, nor start a line that reads as an error.
        return shown(f"{where}: {self.message}")


@dataclass
class SiteDataError(Exception):
    """Bad input or an inconsistent build; carries every problem found, not just the first."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)

    @classmethod
    def single(cls, file: str, field_name: str | None, message: str) -> SiteDataError:
        return cls([Problem(file, field_name, message)])


class BuildStopped(Exception):
    """The build's caller asked it to stop (`serve --watch` shutting down): it ends
    between two of the pool's chunks, the chunks not started cancelled, nothing written."""
