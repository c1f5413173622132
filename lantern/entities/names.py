"""What an entity is: a kind, a normalised name, and the id they give.

An entity is written `KIND:NAME` (`person:Ada Lovelace`, `url:https://example.org/a`): the
kind is a lowercase word, the name everything after the first colon. Names are normalised so
that one thing gets one entity however it was written: Unicode NFC, surrounding whitespace
removed and inner runs of whitespace made one space, and for the kinds the extractor finds,
the rules of that kind (`NORMALISERS`: lowercase e-mail addresses, a URL's scheme and host in
lowercase, a tag without its `#`...). A name given for such a kind must have that kind's form.

The id follows the legacy stores' format, `ent_` + 16 hex digits of sha256(kind + ":" +
lower(name)) (`lantern.store.ids.entity_id`): names that differ only in case are one entity,
shown under the name it was first stored with.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lantern.errors import InvalidInput
from lantern.store.ids import entity_id

KIND_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,63}")
ID_PATTERN = re.compile(r"ent_[0-9a-f]{16}")
MAX_NAME_CHARS = 2_048
MAX_ENTITIES = 1_000
"""Entities one call may name (a filter, an attach, a record's entities)."""

EXTRACTED_KINDS = (
    "url",
    "email",
    "path",
    "mention",
    "tag",
    "issue",
    "commit",
    "wikilink",
    "cve",
)
"""The kinds the extractor finds (`lantern.entities.extraction`), each with its own form."""

_WHITESPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class EntityName:
    """A kind and a normalised name: an entity, whether stored or not."""

    kind: str
    name: str

    @property
    def id(self) -> str:
        return entity_id(self.kind, self.name)

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


EntityKey = EntityName | str
"""What names an entity in a look-up: a kind and name, or an entity id (`ent_...`)."""


def kind(value: object) -> str:
    """A kind: a lowercase word (given in any case, stored in lowercase)."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if KIND_PATTERN.fullmatch(lowered):
            return lowered
    raise InvalidInput(
        "an entity kind is a word of letters, digits, _ and - starting with a letter "
        f"(at most 64), such as person or url; got {value!r}"
    )


def make(kind_value: object, name: object) -> EntityName:
    """The entity of this kind and name, normalised; `InvalidInput` when the name does not fit."""
    checked_kind = kind(kind_value)
    if not isinstance(name, str):
        raise InvalidInput(f"an entity name must be text; got {type(name).__name__}")
    text = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", name)).strip()
    if not text:
        raise InvalidInput(f"an entity needs a name after {checked_kind}:")
    if _CONTROL.search(text):
        raise InvalidInput("an entity name must not contain control characters")
    normalise = NORMALISERS.get(checked_kind)
    normalised = text if normalise is None else normalise(text)
    if normalised is None:
        raise InvalidInput(f"{checked_kind}:{text} is not {_FORMS[checked_kind]}")
    if len(normalised) > MAX_NAME_CHARS:
        raise InvalidInput(f"an entity name is at most {MAX_NAME_CHARS} characters")
    return EntityName(checked_kind, normalised)


def parse(value: object) -> EntityName:
    """`KIND:NAME` as an entity (for writes: an id names no kind or name)."""
    if isinstance(value, EntityName):
        return make(value.kind, value.name)
    if isinstance(value, dict):
        return make(value.get("kind"), value.get("name"))
    if not isinstance(value, str):
        raise InvalidInput(f"an entity is KIND:NAME; got {value!r}")
    found, sep, name = value.partition(":")
    if not sep or not found.strip():
        raise InvalidInput(
            f"an entity is KIND:NAME, such as person:Ada Lovelace or url:https://example.org; "
            f"got {_shown(value)}"
        )
    return make(found, name)


def folded(name: str) -> str:
    """A name as the entity's id reads it (lowercase, `lantern.store.ids.entity_id`): how a
    confined caller is shown every entity name.

    An entity is shared by every scope, and it keeps the spelling it was first stored with,
    which may be another scope's (`ACME` written outside, `Acme` inside): the form all its
    spellings share says nothing of who wrote first.
    """
    return name.lower()


def key(value: object) -> EntityKey:
    """`KIND:NAME`, or an entity id (`ent_` and 16 hex digits), for look-ups."""
    if isinstance(value, str) and ID_PATTERN.fullmatch(value.strip()):
        return value.strip()
    return parse(value)


def keys(values: str | EntityName | Iterable[object] | None) -> list[EntityKey]:
    """Entities named by a filter or a command: one or several, each checked, repeats dropped."""
    if values is None:
        return []
    given = [values] if isinstance(values, str | EntityName | dict) else list(values)
    if len(given) > MAX_ENTITIES:
        raise InvalidInput(f"at most {MAX_ENTITIES} entities at once; got {len(given)}")
    distinct: dict[str, EntityKey] = {}
    for value in given:
        found = key(value)
        distinct.setdefault(id_of(found), found)
    return list(distinct.values())


def names(values: str | EntityName | Iterable[object] | None) -> list[EntityName]:
    """Entities to write (`KIND:NAME` each), checked, repeats dropped."""
    if values is None:
        return []
    given = [values] if isinstance(values, str | EntityName | dict) else list(values)
    if len(given) > MAX_ENTITIES:
        raise InvalidInput(f"at most {MAX_ENTITIES} entities at once; got {len(given)}")
    distinct: dict[str, EntityName] = {}
    for value in given:
        found = parse(value)
        distinct.setdefault(found.id, found)
    return list(distinct.values())


def id_of(value: EntityKey) -> str:
    return value if isinstance(value, str) else value.id


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:79] + "…")


# --- the extracted kinds' forms ----------------------------------------------------------------

_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>[^/?#\s]*)(?P<rest>\S*)")
_EMAIL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9.-]+\.[A-Za-z]{2,24}")
_HANDLE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_])){0,38}")
_TAG = re.compile(r"[^\W\d_][\w-]{0,63}")
_ISSUE_NUMBER = re.compile(r"#(\d{1,9})")
_ISSUE_GH = re.compile(r"gh-(\d{1,9})", re.IGNORECASE)
_ISSUE_REPO = re.compile(r"([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d{1,9})")
_ISSUE_KEY = re.compile(r"([A-Za-z][A-Za-z0-9]{1,9})-(\d{1,9})")
_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")
_CVE = re.compile(r"cve-(\d{4})-(\d{4,7})", re.IGNORECASE)


def _url(text: str) -> str | None:
    found = _URL.fullmatch(text)
    if found is None or (not found["host"] and found["scheme"].lower() != "file"):
        return None
    return f"{found['scheme'].lower()}://{found['host'].lower()}{found['rest']}"


def _email(text: str) -> str | None:
    return text.lower() if _EMAIL.fullmatch(text) else None


def _path(text: str) -> str | None:
    return text if ("/" in text or "\\" in text) and " " not in text else None


def _mention(text: str) -> str | None:
    handle = text[1:] if text.startswith("@") else text
    return handle.lower() if _HANDLE.fullmatch(handle) else None


def _tag(text: str) -> str | None:
    tag = text[1:] if text.startswith("#") else text
    return tag.lower() if _TAG.fullmatch(tag) else None


def _issue(text: str) -> str | None:
    if found := _ISSUE_NUMBER.fullmatch(text):
        return f"#{int(found[1])}"
    if found := _ISSUE_GH.fullmatch(text):
        return f"#{int(found[1])}"
    if found := _ISSUE_REPO.fullmatch(text):
        return f"{found[1].lower()}#{int(found[2])}"
    if found := _ISSUE_KEY.fullmatch(text):
        return f"{found[1].upper()}-{int(found[2])}" if found[1].isupper() else text.lower()
    return None


def _commit(text: str) -> str | None:
    return text.lower() if _COMMIT.fullmatch(text) else None


def _wikilink(text: str) -> str | None:
    page = text[2:-2] if text.startswith("[[") and text.endswith("]]") else text
    page = page.split("|", 1)[0].split("#", 1)[0].strip()
    return page if page and not any(ch in page for ch in "[]") else None


def _cve(text: str) -> str | None:
    found = _CVE.fullmatch(text)
    return None if found is None else f"CVE-{found[1]}-{found[2]}"


NORMALISERS: dict[str, Callable[[str], str | None]] = {
    "url": _url,
    "email": _email,
    "path": _path,
    "mention": _mention,
    "tag": _tag,
    "issue": _issue,
    "commit": _commit,
    "wikilink": _wikilink,
    "cve": _cve,
}
_FORMS = {
    "url": "a URL (scheme://host/...)",
    "email": "an e-mail address",
    "path": "a file path (with a / or \\, no spaces)",
    "mention": "an @handle (letters, digits, _ and single -)",
    "tag": "a #tag (a letter, then letters, digits, _ and -)",
    "issue": "an issue reference (#123, GH-123, owner/repo#123 or ABC-123)",
    "commit": "a commit hash (7 to 40 hex digits)",
    "wikilink": "a wiki page name ([[Page]])",
    "cve": "a CVE id (CVE-2024-12345)",
}
