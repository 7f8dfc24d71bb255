"""The house's floors (issue 44): the folders of src/toolnexus are its layers, bottom-up, and
the module graph read from the code's imports runs one way between them.

Every import counts, wherever it sits: at the top, inside a function, under ``if TYPE_CHECKING:``
(the reader is ``test_import_graph.imports_of``). A module's room is the folder it sits in under
``toolnexus`` (``toolnexus.core.qtypes.choice`` lives in ``core``); the package's own
``__init__`` (the curated namespace) and ``__main__`` are rooms of their own. The rooms, lowest
first::

    0  core                     pure values and rules; core/qtypes/ one module per question type
    1  config cache scheduler   typed values that cross layers, caches, admission; a question
       questionfile             file read into questions and gates
    2  transport                the one place HTTP is spoken
    3  styles                   what answers one request (System One, llm, recordings)
    4  evaluate                 one state or many: pipeline, telemetry, batch, packing
    5  metrics records          the record model and codecs; what a run measures
       calibration report
    6  classifier judge sync    the public API: Classifier, ask / gate / Tape, the blocking facade,
       toolnexus                and the curated namespace over them
    7  run                      the batch run as a library
    8  arrow ray                the engines over the run
    9  serve pytest_plugin      the applications
       cli __main__

A room that is not written here fails the test until it is given a rank: a new room is a
decision, not a default. Within a rank, rooms may import each other, but never in a loop.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from test_import_graph import cycles, modules
from test_import_graph import graph as _read_graph

#: The tree's imports, read once per run (every test here asks).
graph = functools.cache(_read_graph)

FLOORS: list[tuple[str, ...]] = [
    ("core",),
    ("config", "cache", "scheduler", "questionfile"),
    ("transport",),
    ("styles",),
    ("evaluate",),
    ("metrics", "records", "calibration", "report"),
    ("classifier", "judge", "sync", "toolnexus"),
    ("run",),
    ("arrow", "ray"),
    ("serve", "pytest_plugin", "cli", "__main__"),
]
RANK: dict[str, int] = {room: n for n, floor in enumerate(FLOORS) for room in floor}
#: The applications: only they may build on the CLI (the plugin replays what ``eval --replay``
#: loads); serve/ is one but stands on the library alone.
APPS = {"cli", "pytest_plugin", "__main__"}


def room_of(module: str) -> str:
    """``toolnexus.core.qtypes.choice`` -> ``core``; ``toolnexus`` -> ``toolnexus``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def room_graph(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, tuple[str, str, int]]]:
    """room -> {imported room: the first (importer, imported, line) that makes the edge}."""
    rooms: dict[str, dict[str, tuple[str, str, int]]] = {}
    for module, targets in sorted(edges.items()):
        rooms.setdefault(room_of(module), {})
        for target, line in sorted(targets.items()):
            a, b = room_of(module), room_of(target)
            if a != b:
                rooms[a].setdefault(b, (module, target, line))
    return rooms


def upward(edges: dict[str, dict[str, int]]) -> list[str]:
    """Every room that imports a room of a higher floor, named by its first such import."""
    found = []
    for room, targets in sorted(room_graph(edges).items()):
        for target, (module, imported, line) in sorted(targets.items()):
            if room in RANK and target in RANK and RANK[target] > RANK[room]:
                found.append(
                    f"{module} (floor {RANK[room]}, {room}) imports {imported} "
                    f"(floor {RANK[target]}, {target}) at line {line}"
                )
    return found


def room_loops(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    rooms = room_graph(edges)
    return cycles({a: {b: where[2] for b, where in t.items()} for a, t in rooms.items()})


def test_the_rooms_read_bottom_up_as_one_graph() -> None:
    """'The module graph drawn from the code's imports reads one floor per layer: 0 imports
    running up, 0 circles' (issue 44), checked by folder: every room has a floor, no room
    imports a room above it, and no rooms import each other in a loop."""
    edges = graph()
    unranked = sorted({room_of(m) for m in edges} - set(RANK))
    assert not unranked, f"give each room a floor in FLOORS (this file): {unranked}"
    assert not upward(edges), "imports running up:\n" + "\n".join(upward(edges))
    loops = room_loops(edges)
    assert not loops, "loops between rooms: " + "; ".join(" -> ".join(loop) for loop in loops)
    assert len(RANK) == len(set(RANK)) == sum(len(floor) for floor in FLOORS)


def test_the_top_of_the_package_holds_only_rooms() -> None:
    """'At the top of src/toolnexus/ only: __init__, __main__, py.typed,
    question-set.schema.json, and one package per public path' (issue 44): every other name
    there is a room's folder."""
    src = Path(__import__("toolnexus").__file__).parent
    top = {p.name for p in src.iterdir() if p.name != "__pycache__"}
    files = {"__init__.py", "__main__.py", "py.typed", "question-set.schema.json"}
    assert top - files == set(RANK) - {"toolnexus", "__main__"}, sorted(top)


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param(
            {"toolnexus.core.questions": {"toolnexus.transport.retry": 7}},
            [
                "toolnexus.core.questions (floor 0, core) imports toolnexus.transport.retry "
                "(floor 2, transport) at line 7"
            ],
            id="core-imports-transport",
        ),
        pytest.param(
            {"toolnexus.evaluate.pipeline": {"toolnexus.run.engine": 12}},
            [
                "toolnexus.evaluate.pipeline (floor 4, evaluate) imports toolnexus.run.engine "
                "(floor 7, run) at line 12"
            ],
            id="evaluate-imports-run",
        ),
        pytest.param(
            {"toolnexus.cli.eval_cmd": {"toolnexus.evaluate.batch": 1, "toolnexus.cli.errors": 2}},
            [],
            id="downward-and-sideways-pass",
        ),
    ],
)
def test_a_planted_upward_import_is_found(
    edges: dict[str, dict[str, int]], expected: list[str]
) -> None:
    """The checker on a synthetic graph: an import up a floor is named with its line."""
    assert upward(edges) == expected


def test_a_planted_room_loop_is_found() -> None:
    edges = {
        "toolnexus.report.metrics": {"toolnexus.calibration.fit": 4},
        "toolnexus.calibration.fit": {"toolnexus.report.arrays": 9},
    }
    assert room_loops(edges) == [["calibration", "report", "calibration"]]


# --- front doors -------------------------------------------------------------------------

#: The private modules another room may still import past their front door, each with its
#: reason (issue 44's target is none). A whole module taken as an object (``from ..core import
#: observe as probe``) is the first kind: the import names the module itself, so the reader sees
#: it past the door. (The question-type registry is one such module that the core door names, as
#: ``registry``: no module ``core/registry.py`` exists for that name to hit.)
PAST_THE_DOOR: dict[str, str] = {
    **dict.fromkeys(
        (
            "toolnexus.core.observe",
            "toolnexus.core.defaults",
            "toolnexus.core.errors",
            "toolnexus.classifier.client",
            "toolnexus.classifier.factory",
        ),
        "a module imported whole, as an object (module.name at each use)",
    ),
    "toolnexus.config.options": "it imports the config door's own values (`from . import`): "
    "the door naming its names would close a loop config -> config.options -> config",
}


def door_of(module: str) -> str:
    """The front door of a module's room: the room's package (``toolnexus`` for the top)."""
    room = room_of(module)
    return "toolnexus" if room == "toolnexus" else f"toolnexus.{room}"


def past_the_door(edges: dict[str, dict[str, int]]) -> list[str]:
    """Every import of another room's private module (not its front door), with its line."""
    return [
        f"{module} imports {target} at line {line}: import it from {door_of(target)}"
        for module, targets in sorted(edges.items())
        for target, line in sorted(targets.items())
        if room_of(module) != room_of(target) and target != door_of(target)
        and target not in PAST_THE_DOOR
    ]  # fmt: skip


def test_other_rooms_enter_only_through_the_front_door() -> None:
    """'A room's __init__.py is its front door: another room imports only what that door
    names, and the layering test enforces it' (issue 44 item 2). Every import counts (at the
    top, in a function, under TYPE_CHECKING); a door names its room's values lazily (PEP 562),
    so entering costs nothing. A room's own modules import each other directly."""
    edges = graph()
    assert not past_the_door(edges), "\n".join(past_the_door(edges))
    needed = {t for m, ts in edges.items() for t in ts if room_of(m) != room_of(t)}
    assert set(PAST_THE_DOOR) <= needed, f"stale: {sorted(set(PAST_THE_DOOR) - needed)}"


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param(
            {"toolnexus.cli.app": {"toolnexus.report.model": 9}},
            [
                "toolnexus.cli.app imports toolnexus.report.model at line 9: import it from "
                "toolnexus.report"
            ],
            id="a-private-module-of-another-room",
        ),
        pytest.param(
            {"toolnexus.cli.app": {"toolnexus.report": 9, "toolnexus.cli.errors": 3}},
            [],
            id="a-front-door-and-its-own-room-pass",
        ),
        pytest.param(
            {"toolnexus.run.engine": {"toolnexus": 2, "toolnexus.core.qtypes.choice": 4}},
            [
                "toolnexus.run.engine imports toolnexus.core.qtypes.choice at line 4: import it "
                "from toolnexus.core"
            ],
            id="a-nested-folder-is-its-room-s-private-inside",
        ),
    ],
)
def test_a_planted_import_past_the_door_is_found(
    edges: dict[str, dict[str, int]], expected: list[str]
) -> None:
    assert past_the_door(edges) == expected


# --- which rooms may import which libraries ------------------------------------------------

SRC = Path(__import__("toolnexus").__file__).parent
#: The only modules that speak HTTP (besides serve/, the local server, by definition).
HTTP = {
    "transport/aiohttp_adapter.py",
    "transport/httpx_adapter.py",
    "transport/multipart.py",
    "styles/llm.py",
}
STDLIB_PURE = frozenset(
    (
        "__future__",
        "collections",
        "dataclasses",
        "enum",
        "hashlib",
        "json",
        "math",
        "types",
        "typing",
    )
)
#: Modules held to a short list of standard-library imports: pure, like the core should be.
PURE: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            *("core/questions.py", "core/canonical.py", "core/decision.py", "core/answers.py"),
            *("core/validation.py", "core/validity.py", "core/consistency.py"),
            *("core/failures.py", "records/decision.py", "core/policy.py", "core/bands.py"),
        ),
        STDLIB_PURE,
    ),
    # plus what reading an Image from a path or base64 text needs
    **dict.fromkeys(
        ("core/images.py", "core/imagelimits.py"),
        STDLIB_PURE | {"base64", "binascii", "os", "pathlib", "re", "struct"},
    ),
    # lifting images out of a state reads no file itself (an Image does)
    "core/assets.py": frozenset(("__future__", "collections", "dataclasses", "os", "re", "typing")),
    # redaction and safe messages: pure (issue 8 §4); urls.py is redaction's URL half; base64:
    # the redaction scrubs a key's base64 spellings too (issue 43 item 1)
    **dict.fromkeys(
        (
            "transport/redaction.py",
            "transport/adapter.py",
            "transport/authcause.py",
            "core/urls.py",
        ),
        frozenset(("__future__", "base64", "collections", "errno", "http", "json", "re", "typing")),
    ),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def library_rule_breaks() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        imported = _imports(path)
        if rel.parts[0] != "cli" and imported & {"typer", "rich"}:
            found.append(f"{rel} imports a CLI library: {sorted(imported & {'typer', 'rich'})}")
        if str(rel) not in HTTP and rel.parts[0] != "serve" and imported & {"httpx", "aiohttp"}:
            found.append(f"{rel} imports HTTP: {sorted(imported & {'httpx', 'aiohttp'})}")
        allowed = PURE.get(str(rel))
        if allowed is not None and not imported <= allowed:
            found.append(f"{rel} is pure but imports {sorted(imported - allowed)}")
    return found


def test_only_cli_speaks_typer_and_only_transport_speaks_http() -> None:
    """The shape of the house (conventions): pure rooms never import httpx, rich or typer; only
    cli/ imports typer and rich; only the transport's adapters, the llm style and serve/ import
    httpx or aiohttp; the pure modules import a short list of the standard library. Read from
    the source, so a lazy import inside a function counts."""
    assert not library_rule_breaks(), "\n".join(library_rule_breaks())
    assert set(PURE) | HTTP <= {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")}


def test_the_library_never_imports_the_cli() -> None:
    """The CLI is built on the library, never the reverse: what both need (the failure table,
    decision records) lives below it (``core/failures.py``, ``records/decision.py``). Only the
    other applications may build on it."""
    found = [
        f"{module} imports {target} at line {line}"
        for module, targets in sorted(graph().items())
        if room_of(module) not in APPS
        for target, line in sorted(targets.items())
        if room_of(target) == "cli"
    ]
    assert not found, "\n".join(found)
    assert set(modules()) == set(graph())
