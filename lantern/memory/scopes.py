"""Scope confinement: the part of a store a restricted caller may read and write.

`lantern mcp --scope PATTERN` hands an agent part of a store. The restriction is a
`ScopePolicy`, given to `Lantern.open(scopes=...)` and applied by the memory repository to every
read and write it makes, below the CLI and the MCP tools, so that no tool (and no tool added
later) can forget it:

* every memory row the repository reads passes the policy. Listings, searches, `citing`,
  `expire` and `check_refs` leave out records in other scopes; an id that names such a record
  behaves exactly as an id that names nothing (`NotFound` with the same message), in `get`,
  `chain`, `history`, `update`, `supersede`, `archive`, `restore` and `forget`; supersede
  chains stop where a record outside begins;
* a write that would create a record in another scope (`add`, or `supersede` into another
  scope) is refused with `PolicyRefused`: there is no record to hide, the caller asked to write
  where it may not;
* the id of a record outside never reaches the caller (`lantern.memory.outside`): where a
  visible record's `supersedes_id`, a history entry's `superseded_by` or `supersedes_id`, or a
  supersede chain names one, the caller reads `OUTSIDE_SCOPES` instead, which says that a
  record lies beyond the fence without saying which.

Patterns are those of `memory list --scope` (`validation.scope_pattern`): an exact scope; a
prefix ending at a separator and a star (`user:*`); a name and a star (`user:ada*`: that scope
and those under it, never `user:adam`); `\\*` for a literal star. Any of them admits a record.

This module is imported before the store is opened (the MCP server checks its options first),
so it leaves SQLAlchemy to `clauses`, which only runs once a query does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lantern import validation
from lantern.boundary import checked
from lantern.errors import PolicyRefused

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement


@checked
@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """The scopes a caller may see; no patterns means the whole store."""

    patterns: tuple[tuple[str, bool], ...] = ()
    """`(text, is_prefix)` pairs, as `validation.scope_pattern` reads the patterns."""
    written: tuple[str, ...] = ()
    """The patterns as they were given, for messages."""

    @classmethod
    def of(cls, patterns: str | Iterable[str] | None) -> ScopePolicy:
        """A policy from `--scope` patterns; none at all leaves the store unrestricted.

        Args:
            patterns: One scope pattern or several: exact (`user:ada`), a prefix ending at a
                separator and a star (`user:*`), or a name and a star (`user:ada*`: that scope
                and the scopes under it, `user:ada:...` and `user:ada/...`); `\\*` is a
                literal star. None leaves the store unrestricted.

        Raises:
            InvalidInput: A malformed pattern, or a star before a pattern's end.
        """
        if patterns is None:
            return UNRESTRICTED
        values = [patterns] if isinstance(patterns, str) else list(patterns)
        pairs = [pair for value in values for pair in validation.scope_pattern(value)]
        return cls(tuple(dict.fromkeys(pairs)), tuple(dict.fromkeys(values)))

    @property
    def restricted(self) -> bool:
        """Whether any pattern confines the caller (else the whole store is visible)."""
        return bool(self.patterns)

    def allows(self, scope: str) -> bool:
        """Whether a record of this scope is visible: the same test as `clauses`, in Python,
        for rows read by id (a prefix range in code point order is `startswith`).

        Args:
            scope: A record's scope.
        """
        if not self.patterns:
            return True
        return any(
            scope.startswith(text) if prefix else scope == text for text, prefix in self.patterns
        )

    def clauses(self, dialect: str) -> list[ColumnElement[bool]]:
        """The WHERE condition on `memory_records.scope` (none when unrestricted).

        Args:
            dialect: The database's dialect name (`sqlite`, `postgresql`).
        """
        if not self.patterns:
            return []
        from lantern.memory.filters import scope_clause

        return [scope_clause(dialect, self.patterns, name="policy")]

    def check_write(self, scope: str) -> None:
        """Refuse to create a record in a scope outside the policy.

        Args:
            scope: The scope of the record about to be written.

        Raises:
            PolicyRefused: The scope is outside the policy.
        """
        if not self.allows(scope):
            raise PolicyRefused(
                f"scope {scope!r} is outside the scopes this store is restricted to "
                f"({self.describe()})"
            )

    def describe(self) -> str:
        """The patterns as they were given on the command line."""
        return ", ".join(self.written)


UNRESTRICTED = ScopePolicy()
