"""Hostile inputs (issue 9, "Bounded work on hostile input"): states and question files built to
break parsers cost bounded work and end as one line and exit 2, before any request is sent.

Every test here runs against :class:`HostileServer` and checks that nothing reached it.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirun import error_line, run_cli
from hostile_server import HostileServer, qfile_fixture, server_fixture
from paths import TESTS
from toolnexus import create_classifier
from toolnexus.core.jsonlimits import MAX_DEPTH, JsonLimitError, loads
from toolnexus.core.yamlread import ALIAS_BUDGET
from toolnexus.questionfile.load import lint_text

KEY = "tn-hostile-0123456789abcdef"
NOUL_SET = "questions:\n  q: {type: noul, instructions: Is it so?}\n"


server = server_fixture(KEY)


qfile = qfile_fixture(NOUL_SET)


def _eval(server: HostileServer, qfile: Path, *args: str, input: str | bytes | None = None):
    return run_cli(
        "eval", str(qfile), *args, "--base-url", server.base_url, "--format", "json", input=input
    )


def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# --- states ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        pytest.param("s.json", "[" * 100_000 + "]" * 100_000, "nested more than", id="deep-json"),
        pytest.param("s.json", '{"n": ' + "9" * 5000 + "}", "a number of 5000", id="huge-int"),
        pytest.param("s.json", '{"n": 1e999}', "out of range", id="overflowing-float"),
        pytest.param("s.json", '{"n": NaN}', "NaN is not JSON", id="nan"),
        pytest.param("s.json", "[Infinity]", "Infinity is not JSON", id="infinity"),
        pytest.param("s.yaml", "n: " + "9" * 5000 + "\n", "a number of 5000", id="huge-yaml-int"),
        pytest.param("s.yaml", "n: .nan\n", "not a JSON number", id="yaml-nan"),
        pytest.param("s.yaml", "a: 1\na: 2\n", "duplicate key", id="yaml-duplicate-key"),
        pytest.param("s.yaml", "- " * 200 + "x\n", "nested more than", id="deep-yaml"),
    ],
)
def test_a_state_built_to_break_parsers_is_one_line_exit_2_and_never_sent(
    server: HostileServer, qfile: Path, tmp_path: Path, name: str, text: str, expected: str
) -> None:
    """Issue 9: "Deeply nested JSON states and huge integers: one line, exit 2"."""
    state = tmp_path / name
    state.write_text(text)
    r = _eval(server, qfile, str(state))
    assert r.code == 2, r.stderr
    line = error_line(r.stderr)
    assert line.startswith(str(state)) and expected in line, line
    assert server.seen == []


def _node_visits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the YAML reader's node visits: 'refused quickly' as work done, the same on any
    machine, where a wall-clock bound depended on its speed (issue 29 item 2)."""
    from toolnexus.core import yamlread

    visits = [0]
    walk = yamlread._Walker.walk

    def counted(self: Any, *args: Any) -> Any:
        visits[0] += 1
        return walk(self, *args)

    monkeypatch.setattr(yamlread._Walker, "walk", counted)
    return visits


#: The bomb's own nodes (9 levels of 11) plus the alias budget: a reader that expands the
#: billion nodes before refusing visits far more.
QUICK = ALIAS_BUDGET + 9 * 11 + 1


def test_an_alias_bomb_as_a_state_meets_the_question_file_budget(
    server: HostileServer, qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9: "a YAML or JSON state gets the same budget as question files" (an alias bomb as
    a state ran 97 s at 13.3 GB and tried to POST gigabytes)."""
    state = tmp_path / "bomb.yaml"
    state.write_text(_alias_bomb())
    visits = _node_visits(monkeypatch)
    r = _eval(server, qfile, str(state))
    assert 0 < visits[0] <= QUICK
    assert r.code == 2
    assert "alias bomb" in error_line(r.stderr)
    assert server.seen == []


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        pytest.param(b"", "<stdin>: empty input: no state to evaluate", id="empty"),
        pytest.param(b"  \n\n", "<stdin>: empty input: no state to evaluate", id="blank"),
        pytest.param(b"ok \xff\xfe then", "<stdin>: not UTF-8 text (byte 3)", id="binary"),
    ],
)
def test_stdin_that_is_empty_or_binary_is_an_input_error(
    server: HostileServer, qfile: Path, stdin: bytes, expected: str
) -> None:
    """Issue 9: "Empty stdin is an input error, not an empty state to bill. Binary on stdin gets
    the same 'not UTF-8 (byte N)' message as a file"."""
    r = _eval(server, qfile, "-", input=stdin)
    assert r.code == 2
    assert error_line(r.stderr) == expected
    assert server.seen == []


def test_binary_state_file_and_binary_stdin_say_the_same_thing(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s.txt"
    state.write_bytes(b"ok \xff\xfe then")
    r = _eval(server, qfile, str(state))
    assert error_line(r.stderr) == f"{state}: not UTF-8 text (byte 3)"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
        st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),
    )
)
def test_any_stdin_ends_in_a_decision_or_one_line(data: bytes) -> None:
    """Hypothesis drives stdin: whatever arrives, eval prints a decision (exit 0) or ONE line
    (exit 2), never a traceback, and a refused state is never sent."""
    with HostileServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TYPESAFE_API_KEY", KEY)
        q = TESTS / "fixtures" / "hostile-noul.yaml"
        r = run_cli(
            "eval",
            str(q),
            "-",
            "--as",
            "json",
            "--base-url",
            server.base_url,
            "--format",
            "json",
            input=data,
        )
        assert "Traceback" not in r.stderr
        if r.code == 0:
            assert len(server.seen) == 1
            json.loads(r.out)
        else:
            assert r.code == 2, r.stderr
            error_line(r.stderr)
            assert server.seen == []


# --- the decoder's bounds, directly -----------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='[]{}"\\:,0123456789.eE-+ natrufl', max_size=300))
def test_bounded_json_never_raises_anything_but_its_own_errors(text: str) -> None:
    """Hypothesis drives bracket soup: loads returns a value or raises a ValueError (its own
    JsonLimitError or a JSONDecodeError), never a RecursionError or anything else."""
    with contextlib.suppress(ValueError):
        loads(text)


def test_depth_is_counted_outside_strings() -> None:
    inside = '"' + "[" * 1000 + '"'
    assert loads(inside) == "[" * 1000
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(JsonLimitError):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


# --- question files ---------------------------------------------------------------------------


def test_a_large_legitimate_question_file_is_not_called_an_alias_bomb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 9: "The question-file budget counts alias expansion, not plain size: a large
    legitimate file with no aliases must not be called an alias bomb". The budget is lowered
    to 10,000 nodes for the test, so a file of 10,250 option nodes is past it: the verdict is
    the count against the budget, not the size (410 questions against the real 100,000 took
    2-5 s)."""
    from toolnexus.core import yamlread

    monkeypatch.setattr(yamlread, "ALIAS_BUDGET", 10_000)
    assert lint_text(_alias_bomb(5), "bomb.yaml", strict=True).findings[0].code == "TN900"
    options = "\n".join(f"      o{i}: option number {i}" for i in range(250))
    questions = "".join(
        f"  q{n}:\n    type: choice\n    instructions: pick {n}\n    criteria:\n{options}\n"
        for n in range(41)
    )
    lint = lint_text("questions:\n" + questions, "big.yaml", strict=True)
    assert not any("alias" in f.message for f in lint.findings)
    assert len(lint.questions) == 41  # 10,250 option nodes, more than the lowered budget


def test_an_alias_bomb_question_file_is_still_refused_quickly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    visits = _node_visits(monkeypatch)
    findings = lint_text(_alias_bomb(), "bomb.yaml", strict=True).findings
    assert 0 < visits[0] <= QUICK
    assert [f.code for f in findings] == ["TN900"] and "alias bomb" in findings[0].message


# --- concurrency ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "1001", "99999999999"])
def test_absurd_concurrency_is_refused_with_the_accepted_range(
    server: HostileServer, qfile: Path, tmp_path: Path, value: str
) -> None:
    """Issue 9: "absurd values are refused with the accepted range"."""
    states = tmp_path / "s.jsonl"
    states.write_text('"a"\n')
    r = run_cli(
        "batch", str(qfile), str(states), "--concurrency", value, "--base-url", server.base_url
    )
    assert r.code == 2
    assert error_line(r.stderr) == f"--concurrency takes 1..1000 requests in flight, got {value}"
    assert server.seen == []


def test_workers_are_bounded_by_pending_states_not_by_concurrency() -> None:
    """Issue 9: "workers are bounded by the states still pending": 3 states at concurrency
    1000 start at most 3 evaluations at once, and at most 4 workers."""
    import asyncio

    in_flight = peak = 0

    async def evaluate(state: object, questions: object) -> dict[str, object]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}}

    async def main() -> int:
        judge = create_classifier(style="custom", evaluate=evaluate)
        before = len(asyncio.all_tasks())
        most = 0
        stream = judge.evaluate_stream(
            ((i, "s") for i in range(3)), {"q": {"type": "noul", "instructions": "x"}}, 1000
        )
        async for _ in stream:
            most = max(most, len(asyncio.all_tasks()) - before)
        return most

    tasks = asyncio.run(main())
    assert peak <= 3
    assert tasks <= 4
