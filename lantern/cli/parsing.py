"""How the command line is read, beyond what Click does by itself.

- `CommandGroup` remembers which command a call reached (in the context's shared `meta`), so
  that an error raised inside it can be told in that command's own words: its options, its
  usage line.
- `accept_db` gives every command that opens a store a `--db` of its own, so that
  `lantern memory list --db t.db` means what `lantern --db t.db memory list` means.
"""

from __future__ import annotations

from typing import Any

import click

DB_METAVAR = "PATH_OR_URL"
DB_HELP = (
    "Store file path or database URL. Default: $LANTERN_DB, else "
    "$XDG_DATA_HOME/lantern/lantern.db (~/.local/share/lantern/lantern.db)."
)
_COMMAND_KEY = "lantern.command"


class CommandGroup(click.Group):
    """A group that records the command it hands a call to.

    `uses_store=False` marks a group whose commands never open a store (the token file
    commands): they get no `--db`.
    """

    def __init__(self, *args: Any, uses_store: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.uses_store = uses_store

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and name is not None:
            ctx.meta[_COMMAND_KEY] = (command, f"{ctx.command_path} {name}")
        return name, command, rest


def invoked_command(ctx: click.Context) -> tuple[click.Command, str]:
    """The innermost command a call reached, and the words that name it (`lantern memory
    add`); the root group itself when no subcommand was reached."""
    found: tuple[click.Command, str] | None = ctx.meta.get(_COMMAND_KEY)
    if found is None:
        return ctx.find_root().command, ctx.find_root().command_path
    return found


def _remember_db(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_root().ensure_object(dict)["db"] = value


def accept_db(command: click.Command) -> None:
    """Give `command`, and every command under it that opens a store, its own `--db` option.

    The value given after a command word replaces one given before it, as a repeated option
    does. Calling this again on the same command changes nothing.
    """
    if isinstance(command, CommandGroup) and not command.uses_store:
        return
    if not any(param.name == "db" for param in command.params):
        command.params.append(
            click.Option(
                ["--db", "db"],
                metavar=DB_METAVAR,
                expose_value=False,
                callback=_remember_db,
                help=DB_HELP,
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_db(sub)


class FreeTextCommand(click.Command):
    """A command whose arguments are free text (a query, a record's content).

    A word that begins with `-` and is none of the command's options is text: `lantern search
    -spawn` searches for `-spawn`, and `memory add "- a list item"` stores that. A word that
    begins with `--` is still an option, so a mistyped `--limt` is reported rather than
    searched for; after `--` every word is text, as usual.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, _text_after_options(self, ctx, args))
        except click.NoSuchOption as exc:
            if not exc.option_name.startswith("--"):
                raise
            raise click.NoSuchOption(
                exc.option_name,
                f"No such option {exc.option_name!r} (text that starts with -- goes after --)",
                ctx=ctx,
            ) from exc


def _text_after_options(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """`args` with every word of text moved after a `--`, in order, when a word of text begins
    with `-`; unchanged otherwise."""
    values: dict[str, int] = {}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            count = 0 if param.is_flag or param.count else param.nargs
            values.update(dict.fromkeys([*param.opts, *param.secondary_opts], count))
    options: list[str] = []
    text: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            text += args[index:]
            break
        name = word.split("=", 1)[0]
        if name in values:
            count = 0 if "=" in word else values[name]
            if index + count > len(args):
                wanted = "an argument" if count == 1 else f"{count} arguments"
                raise click.BadOptionUsage(name, f"Option {name!r} requires {wanted}.", ctx=ctx)
            options += [word, *args[index : index + count]]
            index += count
        elif word.startswith("--"):
            options.append(word)  # an unknown option: Click reports it
        else:
            text.append(word)
    if not any(word.startswith("-") and len(word) > 1 for word in text):
        return args
    return [*options, "--", *text]
