"""The evidence repository: sources chunked in, found again by keyword or meaning, inspected
and removed.

Every rule about evidence lives in its parts once, for the CLI, the Python API and the MCP
server: `writes` (ingest, remove, embed) and `reads` (search, show, list), over `core`. The
write path beneath them is `lantern.evidence.documents`, row reading `lantern.evidence.rows`,
argument checks `lantern.evidence.inputs`.
"""

from __future__ import annotations

from lantern.boundary import checked
from lantern.evidence.reads import EvidenceReads
from lantern.evidence.writes import EvidenceWrites

__all__ = ["EvidenceRepository"]


@checked
class EvidenceRepository(EvidenceWrites, EvidenceReads):
    """Ingests, searches, shows and removes the evidence in one store."""
