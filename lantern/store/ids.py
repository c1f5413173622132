"""Deterministic IDs: the same content always gets the same id, on every machine.

Evidence IDs follow the legacy store format so that rows ingested now and rows in upgraded old
stores are alike. Golden vectors in the tests pin every function.
"""

from __future__ import annotations

from hashlib import sha256

from lantern.validation import normalized_content


def _hex16(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()[:16]


def memory_id(scope: str, kind: str, content: str) -> str:
    """`mem_` + 16 hex digits of sha256(scope, kind and whitespace-normalised content)."""
    return "mem_" + _hex16(f"{scope}\n{kind}\n{normalized_content(content)}")


def source_id(uri: str) -> str:
    return "src_" + _hex16(uri)


def chunk_id(source_id: str, ordinal: int, text: str) -> str:
    text_hash = sha256(text.encode("utf-8")).hexdigest()
    return "chk_" + _hex16(f"{source_id}:{ordinal}:{text_hash}")


def entity_id(kind: str, name: str) -> str:
    return "ent_" + _hex16(f"{kind}:{name.lower()}")
