"""Opening the store a command runs against, closed when the command ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lantern.loading import loading

if TYPE_CHECKING:
    from lantern.api import Lantern


def open_lantern(
    ctx: click.Context, *, require_current: bool = True, create: bool = False
) -> Lantern:
    """The command's store. Only commands that add something pass `create`: any other command
    on a path where no store is fails with `NoStore` (exit 8) and creates nothing."""
    with loading():
        # Imported here so that `lantern --help` does not load SQLAlchemy.
        from lantern.api import Lantern

        root = ctx.find_root().obj
        lantern = Lantern.open(
            root["db"], require_current=require_current, create=create, clock=root.get("clock")
        )
    ctx.call_on_close(lantern.close)
    return lantern
