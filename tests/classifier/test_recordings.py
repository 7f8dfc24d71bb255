"""Recordings on disk (issue 4, "Recordings"): "--record DIR writes every live exchange as one JSON
file (model, state, questions, response, endpoint unexpanded, time), named by the sha256 of the
canonical request plus the state; no headers, no keys. --replay DIR answers from those files
through the static style; a miss names the state and the question-set digest and suggests
--record." """

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from paths import RECORDINGS_LIVE, REPO
from toolnexus import Image, create_classifier, sha256_hex, validate_decision
from toolnexus.core.canonical import canonical_json, canonical_request, questions_sha256
from toolnexus.core.errors import ConfigError, StaticMiss
from toolnexus.core.qtypes.noul import NoulQuestion
from toolnexus.core.questions import normalize_questions
from toolnexus.styles.recordings import (
    RECORDING_FIELDS,
    load_recordings,
    read_recording,
    recording_name,
    replay_miss_message,
    write_recording,
)

SHIPPED = REPO / "recordings"
SHIPPED_FILES = sorted(SHIPPED.glob("*.json"))
QS = {"refund": NoulQuestion("Is a refund requested?")}
BODY = {
    "model": "jev-1.13.0",
    "answers": {"refund": {"type": "noul", "noul": 0.99}},
    "usage": {"input_tokens": 286, "output_tokens": 20},
}


def _replay(folder: Path, state: Any, questions: Any) -> Any:
    decisions = [r.to_recorded_decision() for r in load_recordings(folder)]

    async def go() -> Any:
        async with create_classifier(style="static", decisions=decisions) as c:
            return await c.evaluate(state, questions)

    return asyncio.run(go())


def test_write_then_replay_round_trips(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path / "new",
        model="jev-latest",
        endpoint="https://${HOST}/v1/systemone",
        state="charged twice",
        questions=QS,
        response=BODY,
        recorded_at="2026-01-02T03:04:05Z",
    )
    assert path.parent == tmp_path / "new"
    obj = json.loads(path.read_text(encoding="utf-8"))
    assert tuple(obj) == RECORDING_FIELDS
    assert obj["model"] == "jev-latest" and obj["served_model"] == "jev-1.13.0"
    assert obj["endpoint"] == "https://${HOST}/v1/systemone", "endpoint stays unexpanded"
    assert obj["questions"] == {
        "refund": {"type": "noul", "instructions": "Is a refund requested?"}
    }
    d = _replay(tmp_path / "new", "charged twice", QS)
    assert d.noul("refund").noul == 0.99 and d.model == "jev-1.13.0"
    # No stray temporary file is left behind by the atomic write.
    assert [p.name for p in (tmp_path / "new").iterdir()] == [path.name]


def test_the_name_is_sha256_of_canonical_request_plus_canonical_state() -> None:
    state = {"b": 1, "a": "x"}
    want = sha256_hex(canonical_request("m", QS) + canonical_json(state)) + ".json"
    assert recording_name("m", QS, state) == want
    assert recording_name("m", QS, state) != recording_name("m", QS, {"b": 2, "a": "x"})
    assert recording_name("m", QS, state) != recording_name("other", QS, state)


def test_recorded_at_defaults_to_utc_now(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path, model="m", endpoint="e", state="s", questions=QS, response=BODY
    )
    stamp = json.loads(path.read_text())["recorded_at"]
    assert stamp.endswith("Z") and "T" in stamp and len(stamp) == 20


def test_a_replay_miss_names_state_digest_and_suggests_record(tmp_path: Path) -> None:
    write_recording(
        tmp_path, model="m", endpoint="e", state="recorded", questions=QS, response=BODY
    )
    with pytest.raises(StaticMiss) as e:
        _replay(tmp_path, "a different ticket entirely", QS)
    line = replay_miss_message(e.value, tmp_path)
    assert "'a different ticket entirely'" in line
    assert f"question-set digest {questions_sha256(normalize_questions(QS))[:12]}" in line
    assert f"--record {tmp_path}" in line


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        pytest.param("{", "not JSON", id="not-json"),
        pytest.param("[]", "must be a JSON object", id="not-object"),
        pytest.param(
            '{"model": "m", "state": "s", "response": {}}', "missing 'questions'", id="no-questions"
        ),
        pytest.param(
            '{"model": "m", "questions": {"q": {"type": "noul", "instructions": "i"}},'
            ' "response": {"model": "x", "answers": {}}}',
            "missing 'state'",
            id="no-state",
        ),
        pytest.param(
            '{"model": "m", "state": "s", "questions": {"q": {"type": "noul", '
            '"instructions": "i"}}, "response": {"answers": {}}}',
            "response model must be a string",
            id="undecodable-response",
        ),
    ],
)
def test_a_bad_recording_fails_at_load_naming_its_path(
    tmp_path: Path, content: str, expect: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_recordings(tmp_path)
    assert str(bad) in str(e.value) and expect in str(e.value)


def test_missing_or_empty_replay_directories_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_recordings(tmp_path / "nope")
    with pytest.raises(ConfigError, match="holds no recordings"):
        load_recordings(tmp_path)


def test_write_into_a_file_path_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="cannot write a recording"):
        write_recording(
            tmp_path / "f", model="m", endpoint="e", state="s", questions=QS, response=BODY
        )


def test_recordings_module_imports_no_http_or_cli_library() -> None:
    """Conventions: recordings.py is a core module: no httpx, typer or rich."""
    text = (REPO / "src" / "toolnexus" / "styles" / "recordings.py").read_text()
    for name in ("httpx", "typer", "rich"):
        assert f"import {name}" not in text and f"from {name}" not in text


# --- the shipped corpus -------------------------------------------------------------------


def test_thirteen_recordings_are_shipped() -> None:
    """Six live captures, seed 001's ticket, seed 000's risk, decisions.json's three guards, and
    the two example images' synthetic answers from the loopback server."""
    assert len(SHIPPED_FILES) == 13


def _example_images() -> dict[str, Image]:
    """The shipped example images by the placeholder a state carries for them."""
    images = [Image(p) for p in sorted((REPO / "examples" / "images").glob("*.*g"))]
    return {i.placeholder: i for i in images}


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name[:12]) for p in SHIPPED_FILES])
def test_each_shipped_recording_replays_and_validates(path: Path) -> None:
    r = read_recording(path)
    qs = normalize_questions(r.questions)
    assert path.name == recording_name(r.model, qs, r.state, r.assets), (
        "name is the request+state(+assets) digest"
    )
    text = path.read_text()
    assert "authorization" not in text.lower()
    state = r.state
    if r.assets:
        # Issue 10: recordings match on the image bytes' hashes and store no image bytes.
        image = _example_images()[state]
        assert r.assets == {state: {"type": "image", "sha256": image.sha256}}
        assert base64.b64encode(image.data).decode()[:24] not in text
        state = image
    d = _replay(SHIPPED, state, qs)
    assert d.model == r.served_model == r.response["model"]
    assert validate_decision(qs, d) is None


def _build_module() -> Any:
    spec = importlib.util.spec_from_file_location("recordings_build", SHIPPED / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_recordings_match_their_sources_and_readme(tmp_path: Path) -> None:
    """Rebuilding from the copies in tests/fixtures/ gives byte-identical files, and the README
    lists each one."""
    build = _build_module()
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    rebuilt = []
    for source, r in build.all_sources():
        path = write_recording(
            tmp_path,
            model=r["model"],
            endpoint=r["endpoint"],
            state=r["state"],
            questions=normalize_questions(r["questions"]),
            response=r["response"],
            recorded_at=r["recorded_at"],
            assets=r.get("assets"),
        )
        assert path.read_bytes() == (SHIPPED / path.name).read_bytes(), source
        assert path.name in readme and source in readme
        rebuilt.append(path.name)
    assert sorted(rebuilt) == [p.name for p in SHIPPED_FILES]


def test_live_capture_responses_are_the_exact_captured_bodies() -> None:
    by_response = {json.dumps(read_recording(p).response, sort_keys=True): p for p in SHIPPED_FILES}
    for capture_path in sorted(RECORDINGS_LIVE.glob("*.json")):
        capture = json.loads(capture_path.read_text(encoding="utf-8"))
        assert sha256_hex(capture["response_raw"]) == capture["response_sha256"]
        key = json.dumps(json.loads(capture["response_raw"]), sort_keys=True)
        assert key in by_response, capture_path.name
        assert capture["response_sha256"] in (SHIPPED / "README.md").read_text()
