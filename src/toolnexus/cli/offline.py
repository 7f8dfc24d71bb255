"""``check-criteria`` and ``canonical`` as plain functions, and the fast path that runs them
without typer.

Both commands are offline and run often (``check-criteria`` on every commit as a pre-commit
hook), so their start-up is measured (``bench/cli_start.py``) and importing typer would be
most of it. ``fast_main`` recognises the plain forms of their command lines and calls the
same functions the Typer commands call (``check_cmd``, ``canonical_cmd``), inside the same
error boundary (``errors.handle_error``). Anything else — ``--help``, an unknown option, a
``--format`` outside its choices, ``--`` — returns ``None`` and the Typer app handles it, so
help and usage errors are never written twice. A test runs the same command lines both ways
and compares exit code, stdout and stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import (
    EXIT_CONDITION,
    EXIT_OK,
    EXIT_USAGE,
)
from .errors import (
    fail,
    handle_error,
    report,
)

if TYPE_CHECKING:
    from ..core import Question
    from ..questionfile import Finding

__all__ = ["canonical", "check_criteria", "fast_main"]

_YAML_SUFFIXES = (".yaml", ".yml")
_LINT_FORMATS = ("text", "json", "sarif")  # render.formats.LintFormat (a test checks)


def _expand(paths: Iterable[Path]) -> list[tuple[Path, bool]]:
    """Files as given, each with True (named by the caller); a directory stands for every
    *.yaml / *.yml file under it, sorted (False: found, not named). A file named twice
    (``questions questions/a.yaml``) is checked once, named if it was named once. A *.yaml
    link under a directory that leads nowhere (a loop, a missing target) is kept, so its
    reading says so, instead of the directory passing without it."""
    out: dict[str, tuple[Path, bool]] = {}  # by absolute name (links are not followed)
    for path in paths:
        if path.is_dir():
            for p in sorted(path.rglob("*")):
                if p.suffix in _YAML_SUFFIXES and (p.is_file() or _dangling(p)):
                    out.setdefault(os.path.abspath(p), (p, False))
        else:
            out[os.path.abspath(path)] = (out.get(os.path.abspath(path), (path, True))[0], True)
    return list(out.values())


def _dangling(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


def check_criteria(
    files: Sequence[Path],
    *,
    strict: bool = False,
    fmt: str = "text",
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    level: str | None = None,
    state: str | None = None,
    as_: str | None = None,
    list_rules: bool = False,
    explain: str | None = None,
) -> int:
    """Lint ``files``, render the findings that pass the controls, return the exit code: 0
    clean (or only ``info``), 1 a finding at or above ``warning``, 2 when a file could not be
    read (its one line is on stderr)."""
    from ..questionfile import QuestionFileError
    from .lintrun import check_file, controls_from, fails, shown
    from .render import LintResult, render

    if list_rules or explain is not None:
        return _rules(explain, fmt)
    if not files:
        fail("Missing argument 'FILE...': give question files or directories")
    controls = controls_from(select=select, ignore=ignore, level=level, strict=strict)
    sample = _sample_state(state, as_)
    findings: list[Finding] = [] if sample is None else list(sample[2])
    unreadable = False
    for path, named in _expand(files):
        skipped: list[str] = []
        try:
            findings.extend(
                check_file(path, controls, None if sample is None else sample[:2], skipped=skipped)
            )
        except QuestionFileError as e:
            report(e)  # the boundary's one line: a file name's ESC or newline is shown, not sent
            unreadable = True
        if named and skipped:
            # Issue 43 item 5: the hook names every staged YAML file, so a named file that is
            # not a question set is still skipped, but never silently.
            from ..core import printable

            sys.stderr.write(
                f"{printable(skipped[0])}: skipped, not a question set (--strict checks it)\n"
            )
    kept = tuple(f for f in findings if shown(f, controls))
    render(LintResult(kept), fmt)
    if unreadable:
        return EXIT_USAGE
    return EXIT_CONDITION if any(fails(f) for f in kept) else EXIT_OK


def _rules(explain: str | None, fmt: str) -> int:
    from ..questionfile import RULES
    from .render import RulesResult, render

    if explain is None:
        render(RulesResult(RULES), fmt)
        return EXIT_OK
    code = explain.strip().upper()
    chosen = tuple(r for r in RULES if r.code == code)
    if not chosen:
        fail(f"--explain {explain!r}: no such rule code (see check-criteria --list-rules)")
    render(RulesResult(chosen, explain=True), fmt)
    return EXIT_OK


def _sample_state(state: str | None, as_: str | None) -> tuple[str, object, list[Finding]] | None:
    """``--state FILE``: its name, its value as the classifier would send it, and TN041 for a
    YAML state (values YAML 1.1 reads as booleans or numbers)."""
    if state is None:
        if as_ is not None:
            fail("--as says how to read --state: give --state FILE too")
        return None
    from ..run import guess_format, load_state
    from .lintbudget import state_findings

    value = load_state(state, as_=as_)  # type: ignore[arg-type]  # checked inside
    traps = []
    if state != "-" and (as_ or guess_format(state)) == "yaml":
        traps = state_findings(state, Path(state).read_text(encoding="utf-8"))
    return state, value, traps


def canonical(
    questions: str,
    *,
    model: str | None = None,
    sha256: bool = False,
    questions_sha256: bool = False,
    pretty: bool = False,
    state: str | None = None,
    image: Sequence[str] = (),
    pack_states: str | None = None,
) -> int:
    """Render the canonical bytes of model + questions (with ``state``: the whole request
    body, images lifted into its ``assets`` map; with ``pack_states``, a JSONL file of states:
    the packed request that asks them all, issue 20); return the exit code."""
    from ..core import canonical_json, canonical_request, questions_to_wire, sha256_hex
    from ..core import questions_sha256 as set_digest
    from ..questionfile import (
        load_question_set,
        resolve_model,
    )
    from .render import CanonicalResult, CanonicalView, render

    chosen_views = {"--sha256": sha256, "--questions-sha256": questions_sha256, "--pretty": pretty}
    views = [name for name, on in chosen_views.items() if on]
    if len(views) > 1:
        fail(f"{views[0]} and {views[1]} do not combine: pick one")
    if questions_sha256 and (state is not None or image or pack_states is not None):
        fail(
            "--questions-sha256 covers the questions alone: it takes no --state, --image or "
            "--pack-states"
        )
    if pack_states is not None and (state is not None or image):
        fail("--pack-states holds the states: it takes no --state or --image")
    if questions == "-" and "-" in (state, pack_states):
        fail("the question set and the state cannot both come from stdin")
    qset = load_question_set(questions)
    if questions_sha256:
        body = canonical_json(questions_to_wire(qset.questions))
        render(CanonicalResult(body, set_digest(qset.questions)), "sha256")
        return EXIT_OK
    chosen = resolve_model(model, qset.model)
    if image and state is None:
        fail("--image needs --state: the state is what refers to the image as <NAME>")
    if pack_states is not None:
        body = _packed_request(chosen, qset.questions, pack_states)
    elif state is None:
        body = canonical_request(chosen, qset.questions)
    else:
        from ..core import ImageLimits, lift_with_questions
        from ..run import attach_images, load_state, parse_image_options

        value = attach_images(load_state(state), parse_image_options(list(image)))
        wire_questions = questions_to_wire(qset.questions)
        lifted = lift_with_questions(value, qset.questions)
        # What would be sent, or the error that stops it being sent.
        ImageLimits().check_request(lifted.assets)
        request: dict[str, object] = {
            "model": chosen,
            "questions": wire_questions,
            "state": lifted.state,
        }
        if lifted.assets:
            request["assets"] = lifted.wire_assets()
        body = canonical_json(request)
    view: CanonicalView = "sha256" if sha256 else "pretty" if pretty else "raw"
    render(CanonicalResult(body, sha256_hex(body)), view)
    return EXIT_OK


def _packed_request(model: str, questions: Mapping[str, Question], source: str) -> bytes:
    """What ``evaluate_pack`` sends for the states of ``source``: the packed request, or, for a
    file of one state, that state's own request (a pack of one is never packed)."""
    from ..core import ImageLimits, lift_with_questions, questions_to_wire
    from ..evaluate import pack_lifted, pack_questions, packed_body
    from ..run import load_states_jsonl

    states = load_states_jsonl(source)
    lifted = [lift_with_questions(s, questions) for s in states]
    if len(lifted) == 1:
        packed, wire = lifted[0], questions_to_wire(questions)
    else:
        packed = pack_lifted(lifted)
        wire = questions_to_wire(pack_questions(questions, len(lifted)))
    ImageLimits().check_request(packed.assets)
    return packed_body(model, packed, wire)


def _options(
    args: Sequence[str], flags: set[str], valued: set[str]
) -> tuple[dict[str, str | bool], list[str]] | None:
    """Split ``args`` into options and positionals, or ``None`` for anything that is not a
    plain form (left to the Typer app, which knows every spelling and writes usage errors)."""
    options: dict[str, str | bool] = {}
    positional: list[str] = []
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
        elif arg in flags and arg not in options:
            options[arg] = True
        elif name in valued and name not in options:
            if not eq:
                value = next(it, "")
                if not value or (value.startswith("-") and value != "-"):
                    return None
            options[name] = value
        else:
            return None
    return options, positional


def _parse_check(args: Sequence[str]) -> int | None:
    parsed = _options(
        args,
        {"--strict", "--list-rules"},
        {"--format", "--select", "--ignore", "--level", "--state", "--as", "--explain"},
    )
    if parsed is None:
        return None
    options, files = parsed
    fmt = str(options.get("--format", "text"))
    level = options.get("--level")
    as_ = options.get("--as")
    listing = "--list-rules" in options or "--explain" in options
    if (
        (not files and not listing)
        or fmt not in _LINT_FORMATS
        or "-" in files
        or level not in (None, "info", "warning", "error")
        or as_ not in (None, "text", "json", "yaml")
    ):
        return None

    def text(name: str) -> str | None:
        value = options.get(name)
        return value if isinstance(value, str) else None

    select, ignore = text("--select"), text("--ignore")
    return check_criteria(
        [Path(f) for f in files],
        strict="--strict" in options,
        fmt=fmt,
        select=[select] if select else [],
        ignore=[ignore] if ignore else [],
        level=text("--level"),
        state=text("--state"),
        as_=text("--as"),
        list_rules="--list-rules" in options,
        explain=text("--explain"),
    )


def _parse_canonical(args: Sequence[str]) -> int | None:
    parsed = _options(args, {"--sha256", "--pretty"}, {"--model", "--state", "--pack-states"})
    if parsed is None:
        return None
    options, positional = parsed
    if len(positional) != 1:
        return None
    model = options.get("--model")
    state = options.get("--state")
    pack_states = options.get("--pack-states")
    return canonical(
        positional[0],
        model=model if isinstance(model, str) else None,
        sha256="--sha256" in options,
        pretty="--pretty" in options,
        state=state if isinstance(state, str) else None,
        pack_states=pack_states if isinstance(pack_states, str) else None,
    )


_FAST = {"check-criteria": _parse_check, "canonical": _parse_canonical}

#: The commands ``fast_main`` may answer; anything else goes straight to the Typer app.
FAST_COMMANDS = frozenset(_FAST)


def fast_main(args: Sequence[str]) -> int | None:
    """The exit code of ``toolnexus *args`` when it is a plain ``check-criteria`` or
    ``canonical`` command line, run without typer; ``None`` to hand it to the Typer app."""
    if not args or args[0] not in _FAST:
        return None
    try:
        return _FAST[args[0]](args[1:])
    except (Exception, KeyboardInterrupt) as e:
        return handle_error(e)
