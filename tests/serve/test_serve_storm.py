"""Issue 32 item 6: "``serve`` can script a storm for tests and benches: a blackout for N seconds
from time T, and a change of ``--rate-limit`` at time T (flags, or the ``--script`` hook)." The
server runs on a clock the test steps: no sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from clirun import error_line, run_cli
from serving import post, run_with
from toolnexus import ConfigError
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions, Server

BODY: dict[str, Any] = {
    "model": "jev-latest",
    "state": "charged twice",
    "questions": {"refund": {"type": "noul", "instructions": "Is a refund requested?"}},
}


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("spec", "status", "retry_after"),
    [
        pytest.param("2+6", 429, "1", id="429"),
        pytest.param("2+6:503", 503, "1", id="503"),
        pytest.param("2+6:529", 529, None, id="529"),
    ],
)
def test_a_blackout_answers_every_request_from_t_for_n_seconds(
    spec: str, status: int, retry_after: str | None
) -> None:
    clock = Clock()

    async def scenario(server: Server) -> list[tuple[int, str | None]]:
        seen = []
        for elapsed in (1.0, 2.0, 5.0, 7.9, 8.0, 30.0):
            clock.now = server.started + elapsed
            r = await post(server.url, BODY)
            seen.append((r.status_code, r.headers.get("Retry-After")))
        return seen

    got = run_with(ServeOptions(synthetic=True, blackout=spec), scenario, clock)
    storm = [(status, retry_after)] * 3
    assert got == [(200, None), *storm, (200, None), (200, None)]


def test_a_rate_change_at_t_changes_the_limit_from_then_on() -> None:
    """``--rate-limit 600/min --rate-change 10=60/min``: ten a second, then one."""
    clock = Clock()

    async def scenario(server: Server) -> tuple[list[int], list[int]]:
        clock.now = server.started + 1
        before = [(await post(server.url, BODY)).status_code for _ in range(3)]
        clock.now = server.started + 11
        after = [(await post(server.url, BODY)).status_code for _ in range(3)]
        return before, after

    options = ServeOptions(synthetic=True, rate_limit="600/min", rate_change="10=60/min")
    before, after = run_with(options, scenario, clock)
    assert before == [200, 200, 200]
    assert after == [200, 429, 429]


def test_a_script_can_time_a_storm_of_its_own() -> None:
    """The ``--script`` hook sees the seconds since the server started."""
    clock = Clock()

    def script(request: ScriptedRequest) -> ScriptedReply | None:
        if request.elapsed >= 4:
            return ScriptedReply(529, b'{"detail": {"error_type": "overloaded_error"}}')
        return None

    async def scenario(server: Server) -> list[int]:
        codes = []
        for elapsed in (1.0, 4.5):
            clock.now = server.started + elapsed
            codes.append((await post(server.url, BODY)).status_code)
        return codes

    assert run_with(ServeOptions(synthetic=True, script=script), scenario, clock) == [200, 529]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        pytest.param({"blackout": "2-6"}, r"START\+SECONDS", id="blackout-shape"),
        pytest.param({"blackout": "2+0"}, "above 0", id="blackout-empty"),
        pytest.param({"blackout": "2+6:404"}, "KIND one of", id="blackout-kind"),
        pytest.param({"rate_change": "10=60/min"}, "give --rate-limit too", id="no-limit"),
        pytest.param(
            {"rate_change": "10:60/min", "rate_limit": "600/min"}, "SECONDS=N/min", id="shape"
        ),
        pytest.param(
            {"rate_change": "10=60/min,5=1/s", "rate_limit": "600/min"}, "time order", id="order"
        ),
    ],
)
def test_a_storm_that_cannot_work_is_refused_naming_the_flag(
    options: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        ServeOptions(synthetic=True, **options).check()


def test_the_flags_are_on_the_command_line() -> None:
    ran = run_cli("serve", "--synthetic", "--blackout", "nonsense")
    assert ran.code == 2 and "--blackout 'nonsense'" in error_line(ran.stderr)
