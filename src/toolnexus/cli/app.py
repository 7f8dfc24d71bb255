"""The Typer app: the one error boundary and the list of commands.

Commands never import this module (pipx's ``commands/*.py`` never import ``main.py``): each
``cli/<name>_cmd.py`` defines a plain function with Typer annotations, raises ``CliError`` from
``cli/errors.py`` (where the exit codes live too), and this module registers it. Adding a
command is one line in the ``COMMANDS`` table at the bottom::

    "report": ("report_cmd", "report_command", None),

A command with subcommands builds its own ``typer.Typer`` in its module, and its line names
that (``"cache": ("cache_cmd", "cache_app", None)``). Keep the table sorted by command name.

The boundary is the app's group class (``BoundaryGroup``), so the console entry point,
``python -m toolnexus`` and Typer's ``CliRunner`` all pass through the same code: a usage,
input or backend error becomes ONE line on stderr and a named exit code (``cli/errors.py``),
never a traceback.

Start-up stays fast: ``main`` registers only the command it runs (``toolnexus report ...``
imports ``report_cmd``, not the other eight modules), and every command when the first word
names none of them (``--help``, a typo, completion). Each command imports what it needs (httpx,
rich tables, the classifier) inside its own function, and ``check-criteria`` and ``canonical``
never import httpx (a subprocess test asserts it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from .. import __version__
from ..core import (
    EXIT_OK,
    EXIT_USAGE,
    one_line,
    printable,
)
from .errors import (
    EXIT_CODES_HELP,
    handle_error,
)


def handle(error: BaseException) -> int:
    """The boundary: typer's own exceptions here, everything else in ``errors.handle_error``
    (shared with the typer-free fast path of ``check-criteria`` and ``canonical``). Writes what
    ``error`` means to the user (one line on stderr) and returns the exit code; re-raises what
    is not ours to handle (a bug keeps its traceback so it can be reported)."""
    if isinstance(error, typer.Exit):
        return error.exit_code
    if isinstance(error, typer.Abort):
        return handle_error(KeyboardInterrupt())
    if isinstance(error, typer.TyperException):
        # Usage errors (an unknown option, a --format value not in its Choice, a missing
        # argument): one line like every other error, naming where help is. `toolnexus` alone
        # prints the help instead (click's NoArgsIsHelpError, matched by name as typer does:
        # its class lives in typer's private vendored click).
        ctx = getattr(error, "ctx", None)
        show = getattr(error, "show", None)
        if type(error).__name__ == "NoArgsIsHelpError" and show is not None:
            show()
        else:
            hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
            message = one_line(error.format_message()).rstrip(".")
            if type(error).__name__ == "NoSuchOption" and ctx is not None:
                message = _no_such_option(str(getattr(error, "option_name", "")), ctx)
            sys.stderr.write(f"toolnexus: {message}{hint}\n")
        return EXIT_USAGE if error.exit_code in (1, 2) else int(error.exit_code)
    return handle_error(error)


def _long_options(command: Any) -> set[str]:
    return {
        o
        for p in getattr(command, "params", ())
        for o in (*p.opts, *p.secondary_opts)
        if o.startswith("--") and o != "--help"
    }


def _commands_with(option: str, group: Any, path: str) -> Iterator[str]:
    for name, command in sorted(getattr(group, "commands", {}).items()):
        if option in _long_options(command):
            yield f"{path} {name}"
        yield from _commands_with(option, command, f"{path} {name}")


def _no_such_option(option: str, ctx: Any) -> str:
    """``No such option: --cache`` with the suggestions that help: this command's options
    that read close to it (click's own list, over names with their dashes, once offered
    ``--backend`` for ``--cache``), and the commands that do take it."""
    import difflib

    own = sorted(_long_options(ctx.command))
    bare = {o.lstrip("-"): o for o in own}
    close = [bare[m] for m in difflib.get_close_matches(option.lstrip("-"), bare, 3, 0.75)]
    root = ctx.find_root()
    # every command, not only the one this run registered
    every = typer.main.get_command(get_app())
    elsewhere = list(_commands_with(option, every, root.info_name or "toolnexus"))
    message = f"No such option: {printable(option)}"
    if close:
        message += f" (did you mean {' or '.join(close)}?)"
    if elsewhere:
        message += f"; {', '.join(elsewhere)} takes it"
    return message


class BoundaryGroup(TyperGroup):
    """The app's group: parsing and every command run inside the one error boundary."""

    def list_commands(self, ctx: Any) -> list[str]:
        # The table's order, whatever order a process registered them in; as typer lists
        # them, the commands with subcommands last.
        names = [name for name in COMMANDS if name in self.commands]
        return sorted(names, key=lambda name: isinstance(self.commands[name], TyperGroup))

    def invoke(self, ctx: Any) -> Any:
        # Typer turns a KeyboardInterrupt inside a command into a silent exit 130 before
        # ``main`` below could see it; catching here keeps the one "interrupted" line.
        try:
            return super().invoke(ctx)
        except typer.Exit:
            raise
        except BaseException as e:
            if not isinstance(e, Exception | KeyboardInterrupt):
                raise
            raise typer.Exit(handle(e)) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(
                args,
                prog_name,
                complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
            # Flushed here, inside the boundary: a full disk under stdout is then one line,
            # not an "Exception ignored" at interpreter exit.
            sys.stdout.flush()
        except (Exception, KeyboardInterrupt) as e:
            code = handle(e)
        else:
            # Non-standalone mode hands back the code of `typer.Exit(n)` raised in a command.
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else EXIT_OK
        if not standalone_mode:
            return code
        sys.exit(code)


app = typer.Typer(
    name="toolnexus",
    cls=BoundaryGroup,
    help="Typed judgments from System One classifiers.",
    no_args_is_help=True,
    # Keys live in memory: a traceback with locals could print one.
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=True,
    rich_markup_mode=None,
)


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"toolnexus {__version__}\n")
        raise typer.Exit(0)


@app.callback(epilog=EXIT_CODES_HELP)
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """Typed judgments from System One classifiers."""


#: The commands, sorted by name (see the module docstring): name -> (module of this package,
#: its command function or Typer, the module attribute holding its help or ``None`` for the
#: function's docstring).
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "batch": ("batch_cmd", "batch_command", None),
    "cache": ("cache_cmd", "cache_app", None),
    "canonical": ("canonical_cmd", "canonical", None),
    "check-criteria": ("check_cmd", "check_criteria", "HELP"),
    "diff": ("diff_cmd", "diff_command", None),
    "eval": ("eval_cmd", "eval_command", None),
    "filter": ("filter_cmd", "filter_command", None),
    "mcp": ("mcp_cmd", "mcp_command", None),
    "report": ("report_cmd", "report_command", None),
    "schema": ("schema_cmd", "schema", None),
    "serve": ("serve_cmd", "serve", None),
}
_registered: set[str] = set()


def register(names: Iterable[str]) -> typer.Typer:
    """Register the commands ``names`` on :data:`app` (importing their modules), each once."""
    from importlib import import_module

    for name in names:
        if name in _registered:
            continue
        module_name, attribute, help_attribute = COMMANDS[name]
        module = import_module(f"{__package__}.{module_name}")
        target = getattr(module, attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target)
        else:
            help_text = getattr(module, help_attribute) if help_attribute else None
            app.command(name, help=help_text)(target)
        _registered.add(name)
    return app


def get_app() -> typer.Typer:
    """The app with every command registered (what tests hand to ``CliRunner``)."""
    return register(COMMANDS)


def _commands_for(args: Sequence[str]) -> Iterable[str]:
    """The one command ``args`` runs when its first word names one; else every command (the
    root's help, a typo's suggestions, shell completion)."""
    if args and args[0] in COMMANDS:
        return (args[0],)
    return COMMANDS


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: runs the app inside ``BoundaryGroup`` and exits with its code."""
    register(_commands_for(sys.argv[1:] if argv is None else argv))
    app(args=argv, prog_name="toolnexus")
    sys.exit(EXIT_OK)  # not reached: the group exits in standalone mode
