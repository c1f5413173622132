"""Deterministic IDs: the same content always gets the same id, on every machine.

Evidence IDs follow the legacy store format so that rows ingested now and rows in upgraded old
stores are alike. Golden vectors in the tests pin every function.
"""

from __future__ import annotations

from hashlib import sha256

from lantern.validation import normalized_content


def _hex16(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()[:16]


def memory_identity(scope: str, kind: str, content: str) -> str:
    """What a memory record says, as 16 hex digits of sha256(scope, kind and
    whitespace-normalised content): two records say the same when these are equal."""
    return _hex16(f"{scope}\n{kind}\n{normalized_content(content)}")


def memory_id(scope: str, kind: str, content: str, attempt: int = 0) -> str:
    """A new record's id: `mem_` + its identity (`memory_identity`).

    The id then stays for the record's life, even when its content changes; so the id a text
    gives may already belong to a record that says something else by now. The next record made
    from that text takes `mem_` + 16 hex digits of sha256 of the same string followed by
    `\n` and `attempt` (1, 2, ...), the first one free.
    """
    text = f"{scope}\n{kind}\n{normalized_content(content)}"
    return "mem_" + _hex16(text if attempt == 0 else f"{text}\n{attempt}")


def source_id(uri: str) -> str:
    return "src_" + _hex16(uri)


def chunk_id(source_id: str, ordinal: int, text: str) -> str:
    text_hash = sha256(text.encode("utf-8")).hexdigest()
    return "chk_" + _hex16(f"{source_id}:{ordinal}:{text_hash}")


def entity_id(kind: str, name: str) -> str:
    return "ent_" + _hex16(f"{kind}:{name.lower()}")
