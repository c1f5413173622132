"""Alembic environment: the work is in `lantern.store.migrations`, shared with
`lantern db upgrade`."""

from alembic import context
from lantern.store.migrations import run_environment

run_environment(context)
