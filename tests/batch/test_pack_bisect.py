"""Issue 32 item 3: "Bisect on any non-retryable 400/422 of a pack, as on 413: only the state
that causes it gets the error record, which names the status and the server's own message; the
others are decided. ``--retry-errors`` asks failed states of a packed run alone. At most about
2·log2(N) extra requests per bad state; say the measured count."

Measured (the table ``test_one_bad_state_costs_at_most_two_requests_per_halving`` asserts):
one bad state in a pack of 20 costs 8 extra requests at position 0, 8 at 7 and 10 at 19 (the
bound 2·ceil(log2 20) = 10); three bad states cost 20 extra (bound 30)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main
from serving import ThreadedServer
from toolnexus import Decision, HTTPStatusError, create_classifier
from toolnexus.evaluate.packed import evaluate_pack
from toolnexus.evaluate.packoutcome import PackOutcome
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
}
POLICY = b'{"detail": "content policy: this state may not be classified"}'


class Policed:
    """``serve --synthetic`` that answers ``status`` to any request whose body holds
    ``poison`` (one state's content fails the whole request, as a content policy does)."""

    def __init__(self) -> None:
        self.status = 400
        self.body = POLICY
        self.poison: bytes | None = b"poison"
        self.bodies: list[bytes] = []
        self.threaded = ThreadedServer(ServeOptions(synthetic=True, script=self._script))

    def _script(self, request: ScriptedRequest) -> ScriptedReply | None:
        if request.endpoint != "systemone":
            return None
        self.bodies.append(request.body)
        if self.poison is not None and self.poison in request.body:
            return ScriptedReply(self.status, self.body)
        return None

    @property
    def url(self) -> str:
        return self.threaded.url + "/v1"

    @property
    def requests(self) -> int:
        return len(self.bodies)


@pytest.fixture(scope="module")
def policed_server() -> Iterator[Policed]:
    s = Policed()
    with s.threaded:
        yield s


@pytest.fixture
def policed(policed_server: Policed) -> Policed:
    policed_server.status, policed_server.body, policed_server.poison = 400, POLICY, b"poison"
    policed_server.bodies.clear()
    return policed_server


def _states(n: int, bad: set[int]) -> list[str]:
    return [f"ticket {i}: {'poison' if i in bad else 'charged twice'}" for i in range(n)]


def _pack(url: str, states: list[str]) -> PackOutcome:
    async def go() -> PackOutcome:
        async with create_classifier(
            base_url=url, api_key_env="NO_SUCH", model="jev-latest", retry_base_ms=1
        ) as c:
            return await evaluate_pack(c.pipeline, states, c.prepare(QUESTIONS))

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("status", "bad", "extra"),
    [
        pytest.param(400, {0}, 8, id="400-first"),
        pytest.param(400, {7}, 8, id="400-middle"),
        pytest.param(422, {19}, 10, id="422-last"),
        pytest.param(400, {2, 9, 16}, 20, id="400-three-bad"),
    ],
)
def test_one_bad_state_costs_at_most_two_requests_per_halving(
    policed: Policed, status: int, bad: set[int], extra: int
) -> None:
    """Issue 32 item 3: "a pack of 20 with one state the server answers 400 gives 19 decisions
    and 1 error record naming it" within "about 2·log2(N) extra requests per bad state"."""
    policed.status = status
    out = _pack(policed.url, _states(20, bad))
    for i, result in enumerate(out.results):
        if i in bad:
            assert isinstance(result, HTTPStatusError)
            assert f"HTTP {status}" in result.message
            assert "content policy: this state may not be classified" in result.message
        else:
            assert isinstance(result, Decision), (i, result)
    sent = sum(1 for r in out.requests if r.sent)
    assert sent == policed.requests
    assert sent - 1 == extra  # the measured count the module docstring states
    assert extra <= len(bad) * 2 * math.ceil(math.log2(20))


def test_the_apis_usage_error_is_not_bisected(policed: Policed) -> None:
    """An unknown model's 400 (``api_usage_error``) fails every request of the run alike: one
    request, every state's result, and fail fast stops the run (no bisection)."""
    policed.body = b'{"detail": {"error_type": "api_usage_error", "message": "Unknown model"}}'
    out = _pack(policed.url, _states(8, set(range(8))))
    assert policed.requests == 1
    assert all(isinstance(r, HTTPStatusError) for r in out.results)


def test_retry_errors_asks_the_failed_states_alone(
    policed: Policed, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 32 item 3: "--retry-errors asks failed states of a packed run alone"."""
    qfile = tmp_path / "q.yaml"
    qfile.write_text(
        "questions:\n  refund:\n    type: noul\n    instructions: Is a refund requested?\n",
        encoding="utf-8",
    )
    states = _states(10, {3})
    data = tmp_path / "in.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"t{i}", "text": s}) + "\n" for i, s in enumerate(states)),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    common = ["batch", str(qfile), str(data), "--id-field", "id", "--state-field", "text",
              "--base-url", policed.url, "--model", "jev-latest", "--pack", "10",
              "--output", str(out)]  # fmt: skip
    code, _, err = run_main(capfd, *common)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [r["id"] for r in records if "error" in r]
    assert failed == ["t3"], err
    assert "HTTP 400" in records[3]["error"]["message"]
    assert code != 0
    policed.bodies.clear()
    policed.poison = None  # the policy relented: the retried state is answered
    code, _, err = run_main(capfd, *common, "--retry-errors")
    assert code == 0, err
    assert len(policed.bodies) == 1  # t3 alone, not packed again
    sent = json.loads(policed.bodies[0])
    assert sent["state"] == states[3]
