"""Alembic environment: the work is in `lantern.migrations`, shared with `lantern db upgrade`."""

from alembic import context
from lantern.migrations import run_environment

run_environment(context)
