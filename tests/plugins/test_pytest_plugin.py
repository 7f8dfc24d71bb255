"""The pytest plugin (issue 36 item 1), run in-process with ``pytester`` against recordings each
test builds, and ``toolnexus serve --synthetic`` on 127.0.0.1 for the record mode.

The shared venv carries no ``pytest11`` entry point for it (every worktree's pytest would load
it): the runs here pass ``-p toolnexus.pytest_plugin``, and a test reads the entry point from
pyproject.toml and checks that it names an importable module with the hooks.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

# Imported out here, not first inside an in-process run: pytester drops the modules a run
# imported when it ends, and a re-imported ``yaml`` no longer knows the node classes of the
# libyaml extension, which cannot be re-imported (every flow mapping read "unsupported").
import toolnexus.questionfile.load  # noqa: F401
from paths import REPO as ROOT
from paths import docs_text
from serving import ThreadedServer
from toolnexus.serve.options import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest
from toolnexus.styles.recordings import write_recording

pytest_plugins = ["pytester"]

# The plugin module is imported by this file already: pytest cannot assertion-rewrite it.
PLUGIN = (
    "-p", "toolnexus.pytest_plugin", "-p", "no:cacheprovider",
    "-W", "ignore::pytest.PytestAssertRewriteWarning",
)  # fmt: skip
SECRET = "sk-plugin-test-secret-4412"
REFUND = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
DESK = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk handles it?",
        "criteria": {"billing": "Money matters.", "tech": "Broken things.", "other": "Else."},
    }
}
CHARGED = "Invoice INV-104 was charged twice. Please refund the duplicate."


def _record(directory: Path, state: str, noul: float) -> None:
    from toolnexus.core.questions import normalize_questions

    write_recording(
        directory,
        model="jev-latest",
        endpoint="https://api.typesafe.ai/v1/systemone",
        state=state,
        questions=normalize_questions(REFUND),
        response={"model": "jev-1.13.0", "answers": {"refund": {"type": "noul", "noul": noul}}},
    )


TEST_FILE = f"""
import asyncio
from toolnexus.pytest_plugin import assert_answer

REFUND = {REFUND!r}

def test_refund(toolnexus_classifier):
    d = toolnexus_classifier.evaluate({CHARGED!r}, REFUND)
    assert_answer(d, "refund", band="yes")

def test_unrecorded(toolnexus_classifier):
    toolnexus_classifier.evaluate("Nobody recorded this one.", REFUND)

def test_async(toolnexus_async_classifier, toolnexus_classifier):
    d = asyncio.run(toolnexus_async_classifier.evaluate({CHARGED!r}, REFUND))
    assert d == toolnexus_classifier.evaluate({CHARGED!r}, REFUND)

def test_async_unrecorded(toolnexus_async_classifier):
    asyncio.run(toolnexus_async_classifier.evaluate("Nor this one.", REFUND))
"""


def test_the_entry_point_names_an_importable_plugin() -> None:
    """'A pytest plugin shipped in the package (entry point pytest11)': pyproject's entry point
    names a module with the options, the collector and the fixtures."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ((name, target),) = project["entry-points"]["pytest11"].items()
    # The entry point's name IS the module's: `-p toolnexus.pytest_plugin` (a source checkout,
    # the README) then finds it registered, where another name fails the whole run.
    assert name == target == "toolnexus.pytest_plugin"
    module = importlib.import_module(target)
    for hook in ("pytest_addoption", "pytest_collect_file", "pytest_runtest_call"):
        assert callable(getattr(module, hook)), hook
    assert callable(module.toolnexus_classifier) and callable(module.assert_answer)


def test_importing_the_plugin_costs_nothing() -> None:
    """'importing it costs nothing: no httpx, aiohttp or YAML until a fixture is used'."""
    heavy = ("httpx", "aiohttp", "yaml", "typer", "rich", "toolnexus.classifier.client", "mcp")
    code = (
        "import sys, toolnexus.pytest_plugin\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_replay_passes_and_a_miss_fails_with_the_command_that_records_it(
    pytester: pytest.Pytester,
) -> None:
    """'a miss fails the test with the question-set digest and the command that records it'."""
    _record(pytester.path / "recordings", CHARGED, 0.99)
    pytester.makepyfile(test_refunds=TEST_FILE)
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(passed=2, failed=2)
    from toolnexus.core.canonical import questions_sha256
    from toolnexus.core.questions import normalize_questions

    digest = questions_sha256(normalize_questions(REFUND))[:12]
    result.stdout.fnmatch_lines(
        [
            "toolnexus: no recording in recordings for state 'Nobody recorded this one.' with "
            f"question-set digest {digest}; record it with: pytest -p toolnexus.pytest_plugin "
            "--toolnexus-record test_refunds.py::test_unrecorded",
            "toolnexus: no recording in recordings for state 'Nor this one.'*"
            "test_refunds.py::test_async_unrecorded",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # A base URL's credentials never reach the failure line (replaying sends nothing to it).
    url = f"http://user:{SECRET}@127.0.0.1:9/v1"
    shown = pytester.runpytest_inprocess(*PLUGIN, "--toolnexus-base-url", url)
    shown.stdout.fnmatch_lines(["*--toolnexus-base-url 'http://«redacted»@127.0.0.1:9/v1' *"])
    assert SECRET not in shown.stdout.str()


POISON = "A state the server refuses."


def _refuse_poison(request: ScriptedRequest) -> ScriptedReply | None:
    if request.endpoint == "systemone" and request.json.get("state") == POISON:
        return ScriptedReply(400, json.dumps({"detail": "this state is refused"}).encode())
    return None


def test_record_then_replay_give_the_same_decision_and_no_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'recording and replaying return the same objects' (the peer's record mode does not);
    --toolnexus-rerecord sends again; the key never reaches a recording."""
    monkeypatch.setenv("TYPESAFE_API_KEY", SECRET)
    pytester.makepyfile(
        test_same=f"""
        import os
        REFUND = {REFUND!r}
        DESK = {DESK!r}

        def test_both(toolnexus_classifier):
            a = toolnexus_classifier.evaluate({CHARGED!r}, REFUND)
            b = toolnexus_classifier.evaluate("The printer is on fire.", DESK)
            with open(os.environ["DECISIONS_OUT"], "a") as f:
                f.write(repr((a, b)) + "\\n")
        """
    )
    out = pytester.path / "decisions.txt"
    monkeypatch.setenv("DECISIONS_OUT", str(out))
    recordings = pytester.path / "recordings"
    with ThreadedServer(ServeOptions(synthetic=True, script=_refuse_poison)) as server:
        url = server.url + "/v1"
        base = (*PLUGIN, "--toolnexus-base-url", url)
        pytester.runpytest_inprocess(*base, "--toolnexus-record").assert_outcomes(passed=1)
        sent = len(server.seen)
        assert sent == 2 and len(list(recordings.glob("*.json"))) == 2
        pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=1)
        assert len(server.seen) == sent  # replay sends nothing
        pytester.runpytest_inprocess(*base, "--toolnexus-rerecord").assert_outcomes(passed=1)
        assert len(server.seen) == sent + 2
        # A backend failure while recording is one line too: the library's, naming the URL.
        pytester.makepyfile(
            test_poison=f"""
            def test_poison(toolnexus_classifier):
                toolnexus_classifier.evaluate({POISON!r}, {REFUND!r})
            """
        )
        failed = pytester.runpytest_inprocess(*base, "--toolnexus-record", "test_poison.py")
        failed.assert_outcomes(failed=1)
        failed.stdout.fnmatch_lines(
            [f"toolnexus: recording failed: POST {url}/systemone: HTTP 400: this state is refused*"]
        )
        assert "Traceback" not in failed.stdout.str()
    recorded, replayed, rerecorded = out.read_text(encoding="utf-8").splitlines()
    assert recorded == replayed == rerecorded
    for path in recordings.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize(
    ("answer", "kwargs", "expected"),
    [
        pytest.param(
            {"type": "noul", "noul": 0.5},
            {"band": "yes"},
            "answer 'q': expected band 'yes', got 'uncertain'\n  noul 0.5",
            id="noul-band",
        ),
        pytest.param(
            {
                "type": "choice",
                "choice": "tech",
                "probabilities": {"billing": 0.3, "tech": 0.6, "other": 0.1},
                "confidence": 0.55,
            },
            {"choice": "billing", "min_confidence": 0.8},
            "answer 'q': expected choice 'billing', got 'tech'; expected confidence >= 0.8, "
            "got 0.55\n  choice 'tech' (confidence 0.55): tech 0.6, billing 0.3, other 0.1",
            id="choice-distribution",
        ),
        pytest.param(
            {
                "type": "score",
                "score": 1.2,
                "legend": {"0": "low", "1": "mid", "2": "high"},
                "probabilities": {"0": 0.2, "1": 0.4, "2": 0.4},
                "confidence": 0.7,
            },
            {"level": "high"},
            "answer 'q': expected level 'high', got 1 'mid'\n"
            "  score 1.2, level 1 'mid' (confidence 0.7): 0 low 0.2, 1 mid 0.4, 2 high 0.4",
            id="score-level",
        ),
        pytest.param(
            {"type": "noul", "noul": 0.2},
            {"noul_at_least": 0.3},
            "answer 'q': expected noul >= 0.3, got 0.2\n  noul 0.2",
            id="noul-at-least",
        ),
    ],
)
def test_assert_answer_prints_the_distribution(
    answer: dict[str, object], kwargs: dict[str, object], expected: str
) -> None:
    """'Assertion helpers (assert_answer(decision, key, choice=, min_confidence=, band=)) print
    the distribution on failure'."""
    from toolnexus.core.decision import parse_decision
    from toolnexus.pytest_plugin import assert_answer

    decision = parse_decision({"model": "m", "answers": {"q": answer}})
    with pytest.raises(AssertionError) as failed:
        assert_answer(decision, "q", **kwargs)  # type: ignore[arg-type]
    assert str(failed.value) == expected


def test_golden_cases_run_as_test_items(pytester: pytest.Pytester) -> None:
    """'Golden cases ... run as parametrized tests (pytest --toolnexus-cases cases.jsonl)':
    each line an item named by its id, a question file relative to the cases file."""
    _record(pytester.path / "recordings", CHARGED, 0.99)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "refund.yaml").write_text(
        "questions:\n  refund:\n    type: noul\n    instructions: Is a refund requested?\n",
        encoding="utf-8",
    )
    lines = [
        {"id": "dup", "questions": "refund.yaml", "state": CHARGED,
         "expect": {"answers": {"refund": {"band": "yes", "noul_at_least": 0.9}}}},
        {"id": "wrong", "questions": REFUND, "state": CHARGED,
         "expect": {"answers": {"refund": {"band": "no"}}}},
        {"questions": REFUND, "state": "Not recorded.", "expect": {}},
    ]  # fmt: skip
    cases = pytester.path / "cases" / "golden.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in lines) + "\n", encoding="utf-8")
    result = pytester.runpytest_inprocess(*PLUGIN, "--toolnexus-cases", "cases/golden.jsonl", "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "cases/golden.jsonl::dup PASSED*",
            "cases/golden.jsonl::wrong FAILED*",
            "cases/golden.jsonl::line-3 FAILED*",
            "*golden.jsonl:2: answer 'refund': expected band 'no', got 'yes'",
            "*record it with: pytest -p toolnexus.pytest_plugin --toolnexus-record "
            "--toolnexus-cases cases/golden.jsonl cases/golden.jsonl::line-3",
        ]
    )


def test_a_bad_case_line_is_one_collection_error(pytester: pytest.Pytester) -> None:
    """Every user-facing failure is one line naming file:line."""
    (pytester.path / "cases.jsonl").write_text('{"state": "x"}\n', encoding="utf-8")
    result = pytester.runpytest_inprocess(*PLUGIN, "--toolnexus-cases", "cases.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cases.jsonl:1: missing 'questions'"])
    assert os.sep + "toolnexus" + os.sep not in result.stdout.str()


def test_the_readme_shows_the_shipped_example_test() -> None:
    """The README's test example is examples/test_triage.py, which its sh block runs."""
    shipped = (ROOT / "examples" / "test_triage.py").read_text(encoding="utf-8")
    assert f"```python\n{shipped}```" in docs_text()


GATED = """questions:
  refund:
    type: noul
    instructions: Is a refund requested?
gates:
  refund_desk:
    rules:
      - {question: refund, at_least: 0.5, action: permit}
    default: hold
"""


def test_gates_in_tests_and_in_golden_cases(pytester: pytest.Pytester) -> None:
    """'Assertion helpers (... and one for gate actions) print the distribution on failure';
    a golden case expects a gate's action (the question file's gates:)."""
    _record(pytester.path / "recordings", CHARGED, 0.99)
    _record(pytester.path / "recordings", "Maybe a refund?", 0.5)
    (pytester.path / "refund.yaml").write_text(GATED, encoding="utf-8")
    pytester.makepyfile(
        test_gate=f"""
        from toolnexus.pytest_plugin import assert_gate

        def test_permit(toolnexus_classifier, toolnexus_questions, toolnexus_gates):
            d = toolnexus_classifier.evaluate({CHARGED!r}, toolnexus_questions("refund.yaml"))
            assert_gate(d, toolnexus_gates("refund.yaml")["refund_desk"], action="permit")

        def test_escalates(toolnexus_classifier, toolnexus_questions):
            d = toolnexus_classifier.evaluate("Maybe a refund?", toolnexus_questions("refund.yaml"))
            assert_gate(d, [{{"question": "refund", "at_least": 0.5, "action": "permit"}}],
                        action="permit")
        """
    )
    cases = [
        {"id": "permit", "questions": "refund.yaml", "state": CHARGED,
         "expect": {"gates": {"refund_desk": "permit"}}},
        {"id": "held", "questions": "refund.yaml", "state": CHARGED,
         "expect": {"gates": {"refund_desk": "hold"}}},
    ]  # fmt: skip
    (pytester.path / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8"
    )
    result = pytester.runpytest_inprocess(
        *PLUGIN, "test_gate.py", "--toolnexus-cases", "cases.jsonl", "-v"
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "test_gate.py::test_permit PASSED*",
            "cases.jsonl::permit PASSED*",
            "E   *AssertionError: gate: expected action 'permit', got 'needs_input' "
            '(uncertain answer "refund")',
            "E * refund: noul 0.5",
            "*cases.jsonl:2: gate: expected action 'hold', got 'permit'*",
        ]
    )
