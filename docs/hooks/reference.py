"""The reference pages, generated at build time from the code (issue 46 item 2: "generated at
build time, never hand-copied"), and the pictures drawn from the bundled recordings.

A page asks for a generated part with a marker line, ``<!-- generated: NAME -->``; the MkDocs
hook :func:`on_page_markdown` replaces it with ``GENERATORS[NAME]()``. Each generator is a plain
function over one definition in the package, so a test calls it without building the site:

- ``cli``: every command and option, from ``typer.main.get_command(app)`` (click's tree);
- ``environment``: every variable a CLI option reads (its ``envvar``), and the library's own;
- ``records``: the record fields, from the record dataclasses (their field comments too);
- ``lint-rules``: the ``check-criteria`` rules, from ``questionfile.rules.RULES``;
- ``exit-codes``: each record error code and its exit code, from ``failures.FAILURES``;
- ``question-schema``: the question file, from the JSON Schema the package ships.

:func:`on_files` adds the generated pictures (SVG) to the site: the report's own charts of a
run, and the pacing timeline of the simulated scheduler (``docs/hooks/charts.py``).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import charts  # docs/hooks/charts.py: MkDocs puts a hook's folder on sys.path while loading it

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


# --- the command line ------------------------------------------------------------------------


def cli_root() -> Any:
    """The click command of the whole app, every command registered."""
    import typer.main

    from toolnexus.cli.app import get_app

    return typer.main.get_command(get_app())


def walk_commands(
    command: Any, path: tuple[str, ...] = ("toolnexus",)
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) of every command, the root first, subcommands sorted by name. Typer
    vendors its own click, so a group is told by its ``commands``, not by a class."""
    yield path, command
    if hasattr(command, "commands"):
        for name in sorted(command.commands):
            sub = command.commands[name]
            if sub.hidden:
                continue
            yield from walk_commands(sub, (*path, name))


def _cell(text: str) -> str:
    """One table cell: one line, reST's roles and double backticks read as Markdown code."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")
    return " ".join(text.split()).replace("|", "\\|")


def _option_row(param: Any) -> str:
    names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    if hasattr(param.type, "choices"):
        kind = " \\| ".join(f"`{c}`" for c in param.type.choices)
    elif getattr(param, "is_flag", False):
        kind = "flag"
    else:
        kind = _cell(f"`{param.metavar or param.type.name.upper()}`") if param.type.name else ""
    default = param.default
    shown = (
        ""
        if default is None or default == () or getattr(param, "is_flag", False) or callable(default)
        else f"`{default}`"
    )
    env = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar or ())
    env = f"`{env}`" if env else ""
    return f"| {names} | {kind} | {shown} | {env} | {_cell(param.help or '')} |"


def command_markdown(path: tuple[str, ...], command: Any) -> str:
    """One command's section: its usage, its help, its arguments and options."""
    name = " ".join(path)
    ctx = command.context_class(command, info_name=name)
    usage = " ".join([name, *command.collect_usage_pieces(ctx)])
    anchor = "-".join(path)
    lines = [f"## `{name}` {{ #{anchor} }}", "", f"```text\n{usage}\n```", ""]
    if command.help:  # verbatim, as --help prints it: its lists and code tables keep their lines
        text = inspect.cleandoc(command.help).replace("\b\n", "")
        lines += ["```text", text, "```", ""]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    if arguments:
        lines += ["| argument | required | what |", "|---|---|---|"]
        lines += [
            f"| `{p.human_readable_name}` | {'yes' if p.required else 'no'} "
            f"| {_cell(getattr(p, 'help', None) or '')} |"
            for p in arguments
        ]
        lines.append("")
    options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    if options:
        lines += ["| option | takes | default | env | what |", "|---|---|---|---|---|"]
        lines += [_option_row(p) for p in options]
        lines.append("")
    if command.epilog:
        lines += [_cell(command.epilog), ""]
    return "\n".join(lines)


def cli_markdown() -> str:
    """Every command and option of ``toolnexus``, one section per command."""
    return "\n".join(command_markdown(p, c) for p, c in walk_commands(cli_root()))


# --- environment variables -------------------------------------------------------------------

#: What the library reads outside the CLI's options (``toolnexus.core.defaults`` and the factory).
LIBRARY_ENV = {
    "TYPESAFE_API_KEY": "the default key variable (`api_key_env=`, `--api-key-env` name "
    "another); read at call time, never logged",
    "TYPESAFE_BASE_URL": "the official SDK's base: a host root, `/v1` appended; used by "
    "`create_classifier` for the typesafe backend when no `base_url=` is given",
}


def environment_markdown() -> str:
    """Every environment variable: the CLI's, by option, then the library's."""
    seen: dict[str, list[str]] = {}
    for path, command in walk_commands(cli_root()):
        for param in command.params:
            names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
            for env in names:
                seen.setdefault(env, []).append(f"`{' '.join(path)} {param.opts[0]}`")
    lines = ["| variable | read as |", "|---|---|"]
    lines += [f"| `{env}` | {', '.join(sorted(set(seen[env])))} |" for env in sorted(seen)]
    lines += ["", "| variable | read by the library as |", "|---|---|"]
    lines += [f"| `{env}` | {what} |" for env, what in sorted(LIBRARY_ENV.items())]
    return "\n".join(lines) + "\n"


# --- records ---------------------------------------------------------------------------------


def _field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment above each field of ``cls``, from its source."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        text = line.strip()
        if text.startswith("#:"):
            pending.append(text[2:].strip())
            continue
        m = re.match(r"([a-z_]+): ", text)
        if m and pending:
            comments[m.group(1)] = " ".join(pending)
        pending = [] if not text.startswith("#") else pending
    return comments


def records_markdown() -> str:
    """The fields of a decision record and of an error record, in the order a run writes them."""
    import dataclasses

    from toolnexus.records.model import DecisionRecord, ErrorRecord, RecordUsage

    out = []
    for cls in (DecisionRecord, ErrorRecord, RecordUsage):
        doc = _cell((cls.__doc__ or "").split("\n\n")[0])
        comments = _field_comments(cls)
        out += [f"## `{cls.__name__}`", "", doc, "", "| field | type | what |", "|---|---|---|"]
        for f in dataclasses.fields(cls):
            out.append(
                f"| `{f.name}` | `{_cell(str(f.type))}` | {_cell(comments.get(f.name, ''))} |"
            )
        out.append("")
    return "\n".join(out)


# --- lint rules ------------------------------------------------------------------------------


def lint_rule_row(rule: Any) -> str:
    """A rule's row: its anchor is the one its SARIF ``helpUri`` names."""
    return f'| <a id="{rule.code.lower()}"></a>{rule.code} | {rule.severity} | {rule.summary} |'


def lint_rules_markdown() -> str:
    from toolnexus.questionfile.rules import RULES

    lines = ["| code | severity | finding |", "|---|---|---|"]
    return "\n".join([*lines, *(lint_rule_row(r) for r in RULES)]) + "\n"


# --- the question file -----------------------------------------------------------------------


def _type(node: dict[str, Any]) -> str:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    kinds = node.get("type")
    if kinds is None:
        alts = node.get("oneOf") or node.get("anyOf") or []
        return " or ".join(_type(a) for a in alts) or "any"
    if kinds == "array" and "items" in node:
        return f"array of {_type(node['items'])}"
    if kinds == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map of {_type(node['additionalProperties'])}"
    return " \\| ".join(kinds) if isinstance(kinds, list) else str(kinds)


def _schema_table(node: dict[str, Any]) -> list[str]:
    props = node.get("properties", {})
    if not props:
        return [f"A {_type(node)}.", ""]
    required = set(node.get("required", ()))
    lines = ["| field | type | required | what |", "|---|---|---|---|"]
    for name, sub in props.items():
        lines.append(
            f"| `{name}` | {_type(sub)} | {'yes' if name in required else 'no'} "
            f"| {_cell(sub.get('description', ''))} |"
        )
    return [*lines, ""]


def question_schema_markdown() -> str:
    """The question file: the shipped JSON Schema's top level, then each of its definitions."""
    text = resources.files("toolnexus").joinpath("question-set.schema.json").read_text("utf-8")
    schema = json.loads(text)
    out = [_cell(schema.get("description", "")), "", *_schema_table(schema)]
    for name, node in schema.get("$defs", {}).items():
        out += [f"### {name} {{ #{name.lower()} }}", ""]
        if node.get("description"):
            out += [_cell(node["description"]), ""]
        out += _schema_table(node)
    return "\n".join(out)


# --- exit codes ------------------------------------------------------------------------------


def exit_codes_markdown() -> str:
    """Each record ``error.code``, the exception it stands for and its exit code, from the one
    table that maps them (``toolnexus.core.failures.FAILURES``)."""
    from toolnexus.core.failures import DUPLICATE_ID, FAILURES, MALFORMED_INPUT

    lines = ["| `error.code` | raised as | exit code |", "|---|---|---|"]
    for cls, failure in FAILURES:
        lines.append(f"| `{failure.code}` | `{cls.__name__}` | `{failure.exit_code}` |")
    for failure in (MALFORMED_INPUT, DUPLICATE_ID):
        lines.append(f"| `{failure.code}` | (an input line) | `{failure.exit_code}` |")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "exit-codes": exit_codes_markdown,
    "cli": cli_markdown,
    "environment": environment_markdown,
    "lint-rules": lint_rules_markdown,
    "question-schema": question_schema_markdown,
    "records": records_markdown,
}


def render(markdown: str) -> str:
    """``markdown`` with each marker replaced by its generator's text."""
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)


# --- MkDocs hooks ----------------------------------------------------------------------------


def on_page_markdown(markdown: str, **_: Any) -> str:
    return render(markdown)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pictures (``assets/generated/*.svg``) to the site's files."""
    from mkdocs.structure.files import File

    for name, svg in charts.pictures().items():
        files.append(File.generated(config, f"assets/generated/{name}", content=svg))
    return files
