"""Issue 45 item 3, "A built-in type in one place": "A test counts, outside the question types'
folder, comparisons with the literals "noul", "choice", "score" and isinstance checks on the
three answer and question classes: at most 3 named files on an allowlist". Read with ``ast``,
not a regex: a subscript ``answer["noul"]``, a ``.get("score")`` or ``registry.attach("noul",
...)`` is not a branch on the type; ``x == "noul"``, ``t in ("choice", "score")``, ``case
"noul":`` and ``isinstance(a, NoulAnswer | ScoreAnswer)`` are.

Everything else dispatches through the registry's per-type hooks (``qtypes/registry.py``); a
fourth type (``tests/qtype_headcount.py``) is written in no file under src/.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolnexus

SRC = Path(toolnexus.__file__).parent
LITERALS = frozenset({"noul", "choice", "score"})
CLASSES = frozenset(
    f"{kind}{what}" for kind in ("Noul", "Choice", "Score") for what in ("Answer", "Question")
)

#: The files that may branch on a built-in type, each with its reason (at most 3).
ALLOWED: dict[str, str] = {
    "decision.py": (
        "seed 000's public Decision.noul() / choice() / score(): each typed accessor names the "
        "one type it returns"
    ),
}


def _is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in LITERALS


def _names_literal(node: ast.AST) -> bool:
    if _is_literal(node):
        return True
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(
        _is_literal(e) for e in node.elts
    )


def _names_class(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in CLASSES)
        or (isinstance(n, ast.Attribute) and n.attr in CLASSES)
        for n in ast.walk(node)
    )


def branches(source: str) -> int:
    """The places in ``source`` that branch on a built-in type's name or class."""
    found = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found += any(_names_literal(x) for x in (node.left, *node.comparators))
        elif isinstance(node, ast.MatchValue):
            found += _is_literal(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            found += _names_class(node.args[1])
    return found


def _entry(rel: str) -> str:
    """``rel``'s name in ALLOWED: the entry it ends with (the layer move of issue 44
    puts ``decision.py`` under a layer folder; the entry still names it), else ``rel``."""
    for name in ALLOWED:
        if rel == name or rel.endswith("/" + name):
            return name
    return rel


def counts() -> Counter[str]:
    """Each file's places, outside ``qtypes/`` (the question types' own folder)."""
    out: Counter[str] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if "qtypes" in path.relative_to(SRC).parts:  # wherever the layer move puts the folder
            continue
        n = branches(path.read_text(encoding="utf-8"))
        if n:
            out[rel] = n
    return out


@pytest.mark.parametrize(
    ("source", "places"),
    [
        pytest.param('if q.type == "noul": pass', 1, id="equality"),
        pytest.param('if "score" != t: pass', 1, id="inequality-reversed"),
        pytest.param('ok = t in ("choice", "score")', 1, id="membership"),
        pytest.param("match t:\n    case 'choice':\n        pass", 1, id="match-case"),
        pytest.param("isinstance(a, NoulAnswer)", 1, id="isinstance"),
        pytest.param("isinstance(a, ChoiceAnswer | ScoreAnswer)", 1, id="isinstance-union"),
        pytest.param("isinstance(q, (answers.ScoreQuestion, str))", 1, id="isinstance-tuple"),
        pytest.param('p = answer["noul"]', 0, id="subscript-is-no-branch"),
        pytest.param('p = obj.get("score")', 0, id="get-is-no-branch"),
        pytest.param('registry.attach("noul", DIFF, f)', 0, id="attach-is-no-branch"),
        pytest.param("isinstance(a, RawAnswer)", 0, id="raw-is-the-open-end"),
        pytest.param('if t == "box": pass', 0, id="another-type"),
    ],
)
def test_the_counter_reads_a_branch(source: str, places: int) -> None:
    assert branches(source) == places


def test_a_built_in_type_is_written_in_at_most_three_files_outside_qtypes() -> None:
    """Issue 45 item 3: at most 3 named files on the allowlist, each with a reason; every other
    file dispatches through the registry."""
    assert len(ALLOWED) <= 3 and all(reason for reason in ALLOWED.values())
    found = {_entry(f): n for f, n in counts().items()}
    unexpected = {f: n for f, n in found.items() if f not in ALLOWED}
    assert unexpected == {}, (
        f"{unexpected}: dispatch through the question type's registry hooks "
        "(qtypes/registry.py), not on its name or class"
    )
    assert all(f in found for f in ALLOWED), "an allowlisted file no longer branches: drop it"


def test_a_plugin_type_is_written_in_no_file_under_src() -> None:
    """ "The plugin type of tests/qtype_headcount.py keeps passing with 0 files outside it"."""
    named = [
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*")
        if p.is_file() and p.suffix in {".py", ".json"} and "headcount" in p.read_text("utf-8")
    ]
    assert named == []


@pytest.fixture
def headcount() -> Iterator[None]:
    """The fourth type of ``tests/qtype_headcount.py``, registered for one test."""
    import qtype_headcount

    qtype_headcount.register()
    try:
        yield
    finally:
        qtype_headcount.unregister()


@pytest.mark.usefixtures("headcount")
def test_a_plugin_type_reads_through_the_judge_hooks_defaults() -> None:
    """A type that defines none of the new hooks reads as before they existed: never sure,
    uncertain under §8B's bands (a gate escalates), no value and no pick, its repr as its
    one line, no 400 of its own."""
    import qtype_headcount
    from toolnexus.core.bands import DEFAULT_BANDS, read_exclusive
    from toolnexus.core.policy import Rule, decide
    from toolnexus.core.qtypes import registry
    from toolnexus.judge.assertions import describe_answer

    answer = qtype_headcount.HeadcountAnswer(3, 0.99)
    judged = read_exclusive(answer, DEFAULT_BANDS)
    assert (judged.band, judged.sure, judged.value(), judged.choice()) == (None, False, None, None)
    assert describe_answer(answer) == repr(answer)
    qtype = registry.of_answer(answer)
    assert qtype is not None and qtype.api_rule({"type": "headcount"}) is None
    for rule in [Rule("n", "deny", is_="x"), Rule("n", "deny", below=2)]:
        got = decide([rule], {"n": answer}, bands=DEFAULT_BANDS)
        assert (got.action, got.escalated) == ("needs_input", True)  # never a confident deny
