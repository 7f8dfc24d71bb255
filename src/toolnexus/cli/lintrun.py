"""``check-criteria``'s rule engine: every rule on one file, inline suppressions, and the controls
linters have (``--select``/``--ignore`` by code or prefix, ``--level``, and a
``[tool.toolnexus.check-criteria]`` table in the nearest ``pyproject.toml``).

Findings that stop ``eval`` loading the file (``Rule.blocks``) are reported whatever the
controls say: the hook and ``eval`` keep one verdict (issue 31 item 4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..core import EXIT_USAGE
from ..questionfile import CODES, LEVELS, Finding, Severity
from .errors import CliError

if TYPE_CHECKING:
    from ..questionfile import Lint

__all__ = [
    "Controls",
    "check_file",
    "check_text",
    "controls_from",
    "fails",
    "load_config",
    "shown",
]

CONFIG_TABLE = "tool.toolnexus.check-criteria"
_CONFIG_KEYS = ("select", "ignore", "level", "strict")


@dataclass(frozen=True)
class Controls:
    """Which findings are shown: codes or prefixes to keep (empty: all) and to drop, and the
    least severity shown (``info`` findings never fail a run)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    level: Severity = "warning"
    strict: bool = False


def _codes(values: Iterable[str], where: str) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        for part in str(value).split(","):
            code = part.strip().upper()
            if not code:
                continue
            if not code.startswith("TN") or not any(c.startswith(code) for c in CODES):
                raise CliError(
                    f"{where}: no rule code is or starts with {part.strip()!r} (see "
                    "check-criteria --list-rules)",
                    EXIT_USAGE,
                )
            out.append(code)
    return tuple(out)


def _level(value: object, where: str) -> Severity:
    for level in LEVELS:
        if value == level:
            return level
    raise CliError(f"{where}: level takes info, warning or error, got {value!r}", EXIT_USAGE)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` upwards (the project's root)."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path | None = None) -> tuple[str, dict[str, Any]]:
    """``(path, table)``: the ``[tool.toolnexus.check-criteria]`` table of the nearest
    ``pyproject.toml``, or ``("", {})``. A broken file or an unknown key is one line, exit 2."""
    path = find_pyproject(start or Path.cwd())
    if path is None:
        return "", {}
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CliError(f"{path}: cannot read: {e.strerror}", EXIT_USAGE) from None
    if b"check-criteria" not in data:  # the common case: no table, and no tomllib import
        return "", {}
    import tomllib

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CliError(f"{path}: not valid TOML: {e}", EXIT_USAGE) from None
    table = doc.get("tool", {}).get("toolnexus", {}).get("check-criteria", {})
    where = f"{path}: [{CONFIG_TABLE}]"
    if not isinstance(table, dict):
        raise CliError(f"{where} must be a table", EXIT_USAGE)
    for key in table:
        if key not in _CONFIG_KEYS:
            raise CliError(
                f"{where}: unknown key {key!r} (known: {', '.join(_CONFIG_KEYS)})", EXIT_USAGE
            )
    return where, table


def controls_from(
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    level: str | None = None,
    strict: bool = False,
    start: Path | None = None,
) -> Controls:
    """The controls of a run: a command-line value wins over the config file's."""
    where, table = load_config(start)

    def listed(name: str) -> list[str]:
        value = table.get(name, [])
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CliError(f"{where}: {name} takes a list of codes", EXIT_USAGE)
        return value

    config_strict = table.get("strict", False)
    if not isinstance(config_strict, bool):
        raise CliError(f"{where}: strict takes true or false", EXIT_USAGE)
    return Controls(
        select=_codes(select, "--select") if select else _codes(listed("select"), where),
        ignore=_codes(ignore, "--ignore") if ignore else _codes(listed("ignore"), where),
        level=_level(level, "--level") if level else _level(table.get("level", "warning"), where),
        strict=strict or config_strict,
    )


def shown(finding: Finding, controls: Controls) -> bool:
    """True when ``finding`` passes the controls (a finding that blocks loading always does)."""
    if finding.is_error:
        return True
    code = finding.code
    if controls.select and not any(code.startswith(s) for s in controls.select):
        return False
    if any(code.startswith(s) for s in controls.ignore):
        return False
    return LEVELS.index(finding.severity) >= LEVELS.index(controls.level)


def fails(finding: Finding) -> bool:
    """True for a finding at or above ``warning``: it makes the exit code 1."""
    return finding.severity != "info"


def check_file(
    path: str | Path,
    controls: Controls,
    state: tuple[str, Any] | None = None,
    *,
    skipped: list[str] | None = None,
) -> list[Finding]:
    """Every finding of one file after suppressions (before the controls, which the caller
    applies, so a suppression is judged against every rule). A file that is not a question set
    (and not checked as one) is appended to ``skipped``, when given."""
    from ..questionfile import lint_file

    lint = lint_file(path, strict=controls.strict)
    if skipped is not None and not lint.question_set:
        skipped.append(lint.path)
    return _check(lint, state)


def check_text(
    text: str, path: str, controls: Controls = Controls(), state: tuple[str, Any] | None = None
) -> list[Finding]:
    """:func:`check_file` on ``text`` shown as ``path``."""
    from ..questionfile import lint_text

    return _check(lint_text(text, path, strict=controls.strict), state)


#: The rule modules, imported on the first file checked (see ``_check``).
_RULES: tuple[ModuleType, ...] | None = None


def _check(lint: Lint, state: tuple[str, Any] | None) -> list[Finding]:
    if not lint.question_set or lint.doc is None:
        return lint.findings
    # Imported here (the rules pull the YAML reader, which --list-rules does not need), once:
    # a relative import per file was a tenth of what the rules cost over 200 small files.
    global _RULES
    if _RULES is None:
        from ..core import defaults
        from . import lintbudget, lintsource, questionrules

        _RULES = (defaults, lintbudget, lintsource, questionrules)
    defaults, budget, source, meaning = _RULES
    found = list(lint.findings)
    doc = lint.doc
    found += source.comment_cuts(lint.text, doc, lint.path)
    if isinstance(doc.value, dict) and isinstance(doc.value.get("questions"), dict):
        found += meaning.meaning_findings(lint.path, doc)
    if not lint.errors:
        model = lint.model or defaults.DEFAULT_MODEL
        found += budget.budget_findings(lint.path, doc, model, lint.questions, state, lint.text)
    marks, malformed = source.suppressions(lint.text, lint.path)
    spans = source.question_spans(doc) if marks else {}
    kept = source.apply_suppressions(found, marks, spans)
    return sorted(set(kept + malformed + source.unused(marks, lint.path)))
