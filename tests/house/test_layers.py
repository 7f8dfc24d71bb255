"""Calls go one way (issue 30 item 3): every module has a rank, and a module imports only modules
of its own rank or below. Every import counts, wherever it sits: at the top, inside a function,
under ``if TYPE_CHECKING:`` (the reader is ``test_import_graph.imports_of``).

The ranks, lowest first::

   10  app        cli/, serve/, __main__, the MCP server, the pytest plugin
    9  engines    arrow, ray, ray_limiter
    8  run        run/ (the batch run as a library: RunConfig, run_batch, readers and sinks;
                  over the public Classifier, under the engines and the CLI that reuse it)
    7  api        toolnexus (the curated namespace), sync/ (the facade over every call below),
                  classifier, factory, judge (the public Classifier: it hands its pipeline down
                  to batch and packing, and loads calibration=FILE)
    6  analysis   metrics/ (below both of these), records/, calibration/, report/
    5  batch      batch, packing, packplan, packcache, packed (several states, one request)
    4  classifier pipeline, telemetry (one state, one decision, its metric events)
    3  styles     systemone, llm, llm_wire, styles, recordings (what answers one request)
    2  transport  transport/ (the one place HTTP is spoken)
    1  config     config, options, backends, cache/, scheduler/ (typed values and admission),
                  questionfile/ (a question file read into questions and gates)
    0  core       the pure modules: questions, qtypes/ (one module per question type and the
                  registry), canonical, decision, answers, validation, ...

A module whose rank is not written here fails the test until it is given one: a new room is a
decision, not a default. ``KNOWN_UPWARD`` lists the upward imports the tree still has (the
structure pass removes them one by one); an entry that no longer exists fails too, so the list
only shrinks.
"""

from __future__ import annotations

import functools

import pytest
from test_import_graph import cycles
from test_import_graph import graph as _read_graph

#: The tree's imports, read once per run (every test here asks).
graph = functools.cache(_read_graph)

CORE, CONFIG, TRANSPORT, STYLES, CLASSIFIER, BATCH, ANALYSIS, API, RUN, ENGINES, APP = range(11)
NAMES = [
    "core",
    "config",
    "transport",
    "styles",
    "classifier",
    "batch",
    "analysis",
    "api",
    "run",
    "engines",
    "app",
]

#: A module's rank: the longest prefix written here wins (``toolnexus.cli`` covers cli/).
RANKS: dict[str, int] = {
    # core: pure, no I/O
    "toolnexus.errors": CORE,
    "toolnexus.envname": CORE,
    "toolnexus.jsonlimits": CORE,
    "toolnexus.printable": CORE,
    "toolnexus.defaults": CORE,
    "toolnexus.questions": CORE,
    # one module per question type and their registry (issue 30 item 4); the layers above
    # attach their hooks (report, lint) from their own modules
    "toolnexus.qtypes": CORE,
    "toolnexus.canonical": CORE,
    "toolnexus.answers": CORE,
    "toolnexus.validity": CORE,
    "toolnexus.decision": CORE,
    "toolnexus.validation": CORE,
    "toolnexus.images": CORE,
    "toolnexus.imagelimits": CORE,
    "toolnexus.assets": CORE,
    "toolnexus.failures": CORE,
    "toolnexus.state": CORE,
    "toolnexus.probe": CORE,  # the packed path's counting probe (issue 45 item 4)
    "toolnexus.telemetry_attrs": CORE,
    "toolnexus.consistency": CORE,
    "toolnexus.policy": CORE,  # SPEC §8B's judge rules over answers (issue 35)
    "toolnexus.bands": CORE,  # how an answer reads for the judge layer (issue 35)
    "toolnexus.comparisons": CORE,  # the command line's comparison grammar (issue 36)
    "toolnexus.urls": CORE,  # a URL's secrets and its redacted form (issue 30 item 3)
    "toolnexus.yamlread": CORE,  # bounded YAML for question files and state files (issue 30)
    # config
    "toolnexus.config": CONFIG,
    "toolnexus.options": CONFIG,
    "toolnexus.backends": CONFIG,
    "toolnexus.cache": CONFIG,
    "toolnexus.scheduler": CONFIG,
    "toolnexus.requestbudget": CONFIG,  # one request against the wire's limits (lint, dry run)
    # a question file read into questions and gates, below the run that takes them and the
    # lint that adds its advisory rules (issue 30: a script never imports toolnexus.cli); it
    # reads a file, so not core, and imports only core
    "toolnexus.questionfile": CONFIG,
    # transport
    "toolnexus.transport": TRANSPORT,
    # styles
    "toolnexus.systemone": STYLES,
    "toolnexus.systemone_reply": STYLES,  # a 200 reply read as a decision, or one clear error
    "toolnexus.llm": STYLES,
    "toolnexus.llm_wire": STYLES,
    "toolnexus.styles": STYLES,
    "toolnexus.recordings": STYLES,
    # classifier
    "toolnexus.pipeline": CLASSIFIER,  # the request pipeline batch and packing drive
    "toolnexus.telemetry": CLASSIFIER,
    "toolnexus.telemetry_pack": CLASSIFIER,
    # batch and packing
    "toolnexus.batch": BATCH,
    "toolnexus.batchgroups": BATCH,  # a batch's requests: scheduler, plan, worker loop
    "toolnexus.batchstream": BATCH,  # evaluate_stream's workers, queue and pull
    "toolnexus.packing": BATCH,
    "toolnexus.packplan": BATCH,
    "toolnexus.packcache": BATCH,
    "toolnexus.packed": BATCH,
    "toolnexus.packoutcome": BATCH,  # what a pack reports; how a failed pack request reads
    # analysis
    "toolnexus.metrics": ANALYSIS,  # metric primitives under calibration/ and report/
    "toolnexus.records": ANALYSIS,
    "toolnexus.calibration": ANALYSIS,
    "toolnexus.report": ANALYSIS,
    # api
    "toolnexus": API,
    "toolnexus.sync": API,
    # the public Classifier over batch and calibration (issue 30 item 3: "Calls go classifier ->
    # batch/packing -> style -> transport and never back")
    "toolnexus.classifier": API,
    "toolnexus.factory": API,
    "toolnexus.judge": API,  # ask / gate / Tape over one classifier (issue 35)
    # the batch run as a library (issue 30 item 1)
    "toolnexus.run": RUN,
    # engines
    "toolnexus.arrow": ENGINES,
    "toolnexus.ray": ENGINES,
    "toolnexus.ray_limiter": ENGINES,
    # apps
    "toolnexus.__main__": APP,
    "toolnexus.cli": APP,
    "toolnexus.serve": APP,
    # the pytest plugin: its recordings, cases and assertion helpers (issue 36 item 1)
    "toolnexus.pytest_plugin": APP,
    "toolnexus.pytest_cases": APP,
    "toolnexus.cassette": APP,
    "toolnexus.assertions": APP,
}

#: The upward imports the tree still has, ``(importer, imported)``: issue 30's structure pass
#: removes them. Never add to this list; a new upward import is a design change to discuss.
KNOWN_UPWARD: set[tuple[str, str]] = set()

#: Loops between rooms (a top-level module or folder of the package), each written from its
#: smallest room: "The two folder loops go: metric primitives move below both calibration/ and
#: report/; arrowrecords.py moves into records/" (issue 30 item 3). Only shrinks, like the above.
KNOWN_ROOM_LOOPS: set[tuple[str, ...]] = set()


def rank_of(module: str, ranks: dict[str, int] = RANKS) -> int | None:
    """The rank of the longest prefix of ``module`` that ``ranks`` names; the package itself
    (``toolnexus``) ranks only its ``__init__``, never the modules under it."""
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        rank = ranks.get(".".join(parts[:n]))
        if rank is not None:
            return rank
    return ranks.get(module) if module == "toolnexus" else None


def upward(
    edges: dict[str, dict[str, int]], ranks: dict[str, int] = RANKS
) -> list[tuple[str, str, int]]:
    """Every import of a module of a higher rank: ``(importer, imported, line)``."""
    found = []
    for module, targets in sorted(edges.items()):
        mine = rank_of(module, ranks)
        for target, line in sorted(targets.items()):
            theirs = rank_of(target, ranks)
            if mine is not None and theirs is not None and theirs > mine:
                found.append((module, target, line))
    return found


def _shown(module: str, target: str, line: int) -> str:
    a, b = rank_of(module), rank_of(target)
    assert a is not None and b is not None
    return f"{module} ({NAMES[a]}) imports {target} ({NAMES[b]}) at line {line}"


def test_every_module_has_a_rank() -> None:
    """A new module is given a rank on purpose: the package's own rank never covers it."""
    assert rank_of("toolnexus.brand_new") is None
    missing = [m for m in graph() if rank_of(m) is None]
    assert not missing, "give each a rank in RANKS (tests/house/test_layers.py): " + ", ".join(
        missing
    )


def test_no_module_imports_a_higher_rank() -> None:
    """'fails on any upward import, lazy and TYPE_CHECKING imports included'."""
    found = upward(graph())
    new = [f for f in found if (f[0], f[1]) not in KNOWN_UPWARD]
    assert not new, "upward imports:\n" + "\n".join(_shown(*f) for f in new)


def test_the_known_upward_imports_only_shrink() -> None:
    still = {(a, b) for a, b, _ in upward(graph())}
    gone = sorted(KNOWN_UPWARD - still)
    assert not gone, f"no longer upward, drop them from KNOWN_UPWARD: {gone}"


def room_loops(edges: dict[str, dict[str, int]]) -> set[tuple[str, ...]]:
    """Every loop between rooms: ``toolnexus.report.metrics`` lives in room ``report``."""

    def room(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    rooms: dict[str, dict[str, int]] = {}
    for module, targets in edges.items():
        for target, line in targets.items():
            if room(module) != room(target):
                rooms.setdefault(room(module), {}).setdefault(room(target), line)
    return {tuple(loop) for loop in cycles(rooms)}


def test_no_new_loop_between_rooms() -> None:
    loops = room_loops(graph())
    new = sorted(loops - KNOWN_ROOM_LOOPS)
    assert not new, "loops between rooms: " + "; ".join(" -> ".join(loop) for loop in new)
    gone = sorted(KNOWN_ROOM_LOOPS - loops)
    assert not gone, f"no longer loops, drop them from KNOWN_ROOM_LOOPS: {gone}"


def test_a_planted_room_loop_is_found() -> None:
    edges = {
        "toolnexus.report.metrics": {"toolnexus.calibration.fit": 4},
        "toolnexus.calibration.fit": {"toolnexus.report.arrays": 9},
    }
    assert room_loops(edges) == {("calibration", "report", "calibration")}


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param(
            {"toolnexus.questions": {"toolnexus.transport.retry": 7}},
            [("toolnexus.questions", "toolnexus.transport.retry", 7)],
            id="core-imports-transport",
        ),
        pytest.param(
            {"toolnexus.pipeline": {"toolnexus.batch": 12, "toolnexus.decision": 3}},
            [("toolnexus.pipeline", "toolnexus.batch", 12)],
            id="pipeline-imports-batch",
        ),
        pytest.param(
            {"toolnexus.cli.eval_cmd": {"toolnexus.batch": 1, "toolnexus.cli.errors": 2}},
            [],
            id="downward-and-sideways-pass",
        ),
    ],
)
def test_a_planted_upward_import_fails_the_checker(
    edges: dict[str, dict[str, int]], expected: list[tuple[str, str, int]]
) -> None:
    """The checker on a synthetic module graph: a planted upward import is found, named with
    its line; imports down or within a rank are not."""
    assert upward(edges) == expected
