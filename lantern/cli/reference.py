"""Generate the CLI reference (docs/reference/cli.md) from the commands' own `--help`.

    python -m lantern.cli.reference > docs/reference/cli.md

A test compares the file with this output, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import click

from lantern.cli import cli

_WIDTH = 100


def _sections(command: click.Command, path: list[str], parent: click.Context | None) -> list[str]:
    settings = {**command.context_settings, "terminal_width": _WIDTH, "max_content_width": _WIDTH}
    # As Click's own `make_context` would: the command's settings, then inherited ones.
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    title = " ".join(path)
    sections = [f"## `{title}`\n\n```text\n{command.get_help(ctx).rstrip()}\n```\n"]
    if isinstance(command, click.Group):
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                sections.extend(_sections(sub, [*path, name], ctx))
    return sections


def render() -> str:
    header = (
        "# CLI reference\n\n"
        "Generated from `--help` by "
        "`python -m lantern.cli.reference > docs/reference/cli.md`; do not edit by hand.\n"
    )
    return "\n".join([header, *_sections(cli, ["lantern"], None)])


if __name__ == "__main__":
    click.echo(render(), nl=False)
