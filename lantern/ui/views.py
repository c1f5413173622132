"""What every page is made of: the open store and how the CLI names it, the page's data for its
template, its JSON twin, and the CLI commands that give the same result."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from lantern.api import Lantern


@dataclass(frozen=True, slots=True)
class Site:
    """The store the view shows, and the words that name it on a command line."""

    lantern: Lantern
    db_words: tuple[str, ...] = ()
    """`--db PATH_OR_URL` when the view was started with one (a URL without its password)."""
    scopes: tuple[str, ...] = ()
    """The `--scope` patterns the view is confined to, as they were given."""

    def command(self, words: Sequence[str]) -> str:
        """A shell command line, each word quoted as the shell needs."""
        return shlex.join(["lantern", *self.db_words, *words])

    def fenced(self, values: dict[str, Any]) -> list[str]:
        """`--scope` options that confine a command as the view is confined, for a command
        that takes them and whose filters name no scope of their own (the CLI has no fence;
        a filter within the view's scopes gives the same records without it)."""
        if not self.scopes or values.get("scope"):
            return []
        return [word for pattern in self.scopes for word in ("--scope", pattern)]


@dataclass(frozen=True, slots=True)
class Command:
    """A CLI command that prints what part of a page shows, and the link to its JSON twin."""

    label: str
    line: str
    json_href: str


@dataclass(slots=True)
class View:
    """A page: its template and data, its JSON twins by part, and their commands."""

    template: str
    title: str
    context: dict[str, Any]
    twins: dict[str, Callable[[], Any]] = field(default_factory=dict)
    """The JSON of each part of the page, computed when asked for; "" is the page's own."""
    commands: list[Command] = field(default_factory=list)


def href(path: str, pairs: Sequence[tuple[str, str]] = ()) -> str:
    """A link inside the view: a fixed path and query parameters, every value encoded."""
    return path + ("?" + urlencode(list(pairs)) if pairs else "")


def id_path(prefix: str, identifier: str) -> str:
    """The page of one item; its id is stored text, so it is encoded as one path segment."""
    return f"{prefix}/{quote(identifier, safe='')}"


def twin_href(path: str, pairs: Sequence[tuple[str, str]], part: str = "") -> str:
    extra = [("format", "json")] + ([("part", part)] if part else [])
    return href(path, [*pairs, *extra])


def needs_query() -> Any:
    """The JSON twin of a search page asked for without a query."""
    from lantern.errors import InvalidInput

    raise InvalidInput("give a query: the q parameter")
