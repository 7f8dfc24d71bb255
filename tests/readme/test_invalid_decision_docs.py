"""Issue 17 item 19: "`evaluate` returning an invalid decision (seed 004: returned, never
cached; `states(...)` fails closed) is only in a docstring: say it in the README, and give the
decision a way to ask." The README's example runs as written and prints what it says."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re

import httpx
import pytest

from paths import docs_text
from toolnexus import Decision, NoulQuestion, create_classifier, memory_cache

MARK = "<!-- invalid-decision-example -->"


def _example() -> str:
    readme = docs_text()
    assert MARK in readme, "the README shows how to check a decision from evaluate"
    block = re.search(r"```python\n(.*?)```", readme[readme.index(MARK) :], re.DOTALL)
    assert block is not None
    return block.group(1)


def test_the_readme_example_runs_and_prints_what_its_comments_say() -> None:
    code = _example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    said = [line.split("# ", 1)[1] for line in code.splitlines() if "print(" in line]
    assert out.getvalue().splitlines() == said


@pytest.mark.parametrize(("noul", "sent"), [(0.7, 1), (1.7, 2)], ids=["valid", "invalid"])
def test_an_invalid_reply_from_evaluate_is_returned_and_never_cached(
    monkeypatch: pytest.MonkeyPatch, noul: float, sent: int
) -> None:
    """Seed 004: "A reply that fails validate-decision is still RETURNED here ... but never
    cached"; a valid one is (the control case)."""
    monkeypatch.setenv("TYPESAFE_API_KEY", "k")
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        body = {"model": "m", "answers": {"refund": {"type": "noul", "noul": noul}}}
        return httpx.Response(200, json=body)

    async def go() -> list[Decision]:
        qs = {"refund": NoulQuestion("Is a refund requested?")}
        async with create_classifier(
            transport=httpx.MockTransport(handler), cache=memory_cache()
        ) as judge:
            return [await judge.evaluate("x", qs), await judge.evaluate("x", qs)]

    decisions = asyncio.run(go())
    assert len(requests) == sent
    assert [d.noul("refund").noul for d in decisions] == [noul, noul]


def test_a_decision_can_ask_whether_it_is_valid() -> None:
    """Issue 17 item 19: "give the decision a way to ask (e.g. `decision.validate(questions)`)":
    the same verdict as ``validate_decision``, the same first failure."""
    from toolnexus import ChoiceQuestion, parse_decision, validate_decision

    qs = {
        "refund": NoulQuestion("Is a refund requested?"),
        "desk": ChoiceQuestion("Which desk?", {"billing": "money", "shipping": "parcels"}),
    }
    good = parse_decision(
        {
            "model": "m",
            "answers": {
                "refund": {"type": "noul", "noul": 0.9},
                "desk": {
                    "type": "choice",
                    "choice": "billing",
                    "probabilities": {"billing": 0.9, "shipping": 0.1},
                    "confidence": 0.8,
                },
            },
        }
    )
    assert good.validate(qs) is None
    bad = parse_decision({"model": "m", "answers": {"refund": {"type": "noul", "noul": 1.7}}})
    problem = bad.validate(qs)
    assert problem is not None and str(problem) == str(validate_decision(qs, bad))
    assert str(problem) == 'classifier: invalid decision: missing answer "desk"'
