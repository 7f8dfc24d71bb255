"""Gates on the hot paths (issue 35, Speed): "report with two gates and outcome labels over
100,000 labelled records: <= 2.0x json.loads of the same file without a target"; "gates add
<= 5% to batch's CPU per record". Held here by counts, never clocks: the report reads a gated
run once (its gates are counted in the same pass as its answers, chunk by chunk), and a batch
record's gates are compiled once per run and equal ``Policy.decide`` on every answer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus.report.judged as judged
from toolnexus import (
    Bands,
    ChoiceAnswer,
    Decision,
    NoulAnswer,
    NoulQuestion,
    Policy,
    Rule,
)
from toolnexus.core.policy import Policy as PolicyClass
from toolnexus.records.decision import decision_record
from toolnexus.records.gates import GateSet, gate_records
from toolnexus.records.model import DecisionRecord, ErrorRecord
from toolnexus.report.build import build_report, read_all_labels
from toolnexus.report.reader import read_run

KEYS = ("addresses_task", "evidence_supports", "unrelated_changes", "needs_clarification")
QUESTIONS = {k: NoulQuestion(f"Is it so: {k}?") for k in KEYS}
MERGE = Policy(
    [
        Rule("addresses_task", "hold", below=0.5),
        Rule("evidence_supports", "hold", below=0.5),
        Rule("unrelated_changes", "hold", at_least=0.5),
        Rule("needs_clarification", "clarify", at_least=0.5),
    ],
    default="permit",
    thresholds={"yes": 0.8, "no": 0.2},
)
STRICT = Policy([Rule("addresses_task", "hold", below=0.5)], default="permit")
GATES = {"merge": MERGE, "strict": STRICT}


def _gated_run(tmp_path: Path, n: int = 300) -> tuple[Path, Path]:
    rng = random.Random(35)
    lines, labels = [], ["id,merge,strict"]
    for i in range(n):
        if i % 37 == 5:
            lines.append(json.dumps(ErrorRecord(f"t{i}", "backend", "down").to_object()))
            continue
        d = Decision("m", {k: NoulAnswer(rng.randint(0, 100) / 100) for k in KEYS})
        body = decision_record(d, QUESTIONS, gates=GATES)
        lines.append(json.dumps(DecisionRecord.from_body(f"t{i}", None, body).to_object()))
        labels.append(
            f"t{i},{rng.choice(['permit', 'hold', 'clarify'])},{rng.choice(['permit', 'hold'])}"
        )
    run, lab = tmp_path / "run.jsonl", tmp_path / "labels.csv"
    run.write_text("\n".join(lines) + "\n", "utf-8")
    lab.write_text("\n".join(labels) + "\n", "utf-8")
    return run, lab


def _independent(run: Path, lab: Path) -> dict[str, dict[str, Any]]:
    """Each gate's counts, from the file by a direct walk (no report code)."""
    outcome = {}
    for line in lab.read_text("utf-8").splitlines()[1:]:
        item, merge, strict = line.split(",")
        outcome[item] = {"merge": merge, "strict": strict}
    out: dict[str, dict[str, Any]] = {}
    for line in run.read_text("utf-8").splitlines():
        rec = json.loads(line)
        for name, g in (rec.get("gates") or {}).items():
            c = out.setdefault(name, {"actions": {}, "escalated": 0, "outcomes": {}})
            c["actions"][g["action"]] = c["actions"].get(g["action"], 0) + 1
            c["escalated"] += g["escalated"]
            by = c["outcomes"].setdefault(outcome[rec["id"]][name], {})
            by[g["action"]] = by.get(g["action"], 0) + 1
    return out


def test_report_counts_gates_in_its_one_pass_over_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35, Speed: the report with two gates and outcome labels reads the run once (the
    gate pass cost a second json.loads of the file); its gate counts are the direct walk's."""
    run, lab = _gated_run(tmp_path)

    def second_pass(path: str) -> Any:
        raise AssertionError(f"{path} read a second time for its gates")

    monkeypatch.setattr(judged, "decided_records", second_pass)
    report = build_report([str(run)], labels_path=str(lab), jobs=1)
    assert report.gates is not None
    for name, want in _independent(run, lab).items():
        got = report.gates[name]
        assert dict(got.actions) == want["actions"]
        assert got.escalated == want["escalated"]
        assert {o: dict(c) for o, c in (got.outcomes or {}).items()} == want["outcomes"]


def test_gate_counts_of_a_run_in_chunks_equal_the_one_piece_read(tmp_path: Path) -> None:
    """The reader counts a long run chunk by chunk and merges in file order: each gate's
    counts, and its first escalated ids, are those of the run read in one piece."""
    run, lab = _gated_run(tmp_path, n=400)
    labels = read_all_labels(str(lab))
    whole = read_run(str(run), labels, jobs=1).gates.reports()
    chunked = read_run(str(run), labels, jobs=1, chunk_bytes=2048).gates.reports()
    assert whole is not None and chunked == whole


_P = st.one_of(
    st.sampled_from([0.0, 0.2, 0.3, 0.5, 0.7, 0.8, 1.0, 1.5, -0.1, float("nan")]),
    st.integers(0, 100).map(lambda k: k / 100),
)
_ANSWER = st.one_of(
    st.none(),
    _P.map(NoulAnswer),
    st.builds(
        lambda c, conf: ChoiceAnswer(c, {"a": 0.5, "b": 0.5} if c == "u" else {c: 1.0}, conf),
        st.sampled_from(["a", "b", "u"]),
        st.integers(0, 100).map(lambda k: k / 100),
    ),
)
_RULE = st.builds(
    lambda key, kind, cut, action: Rule(
        key,
        action,
        **(
            {"below": cut}
            if kind == "below"
            else {"at_least": cut}
            if kind == "at_least"
            else {"is_": "a"}
            if kind == "is"
            else {}
        ),
    ),
    st.sampled_from(["x", "y"]),
    st.sampled_from(["below", "at_least", "is", "none"]),
    st.integers(0, 100).map(lambda k: k / 100),
    st.sampled_from(["hold", "permit"]),
)
_POLICY = st.builds(
    lambda rules, default, reading, skip: Policy(
        rules,
        default=default,
        skip_uncertain=skip,
        **(
            {"thresholds": {"yes": 0.75, "no": 0.25}}
            if reading == "inclusive"
            else {"bands": Bands(0.4, 0.6)}
            if reading == "bands"
            else {}
        ),
    ),
    st.lists(_RULE, max_size=4),
    st.sampled_from(["", "permit"]),
    st.sampled_from(["inclusive", "bands", "default"]),
    st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(_POLICY, _ANSWER, _ANSWER)
def test_compiled_gates_equal_policy_decide(policy: Policy, x: Any, y: Any) -> None:
    """A batch record's gates, compiled once per run, say what ``Policy.decide`` says (the one
    rule, §8B's order: missing, invalid, uncertain, misfit, fires) on every answer."""
    answers = {k: a for k, a in (("x", x), ("y", y)) if a is not None}
    want = policy.decide(answers)
    outcomes = gate_records(GateSet({"g": policy}), answers, None)
    got = outcomes["g"]
    assert got == {"action": want.action, "escalated": want.escalated, "reason": want.reason}
    # the prepared JSON text the codecs write is what the encoder writes for the objects
    assert outcomes.json == json.dumps(outcomes, ensure_ascii=False, separators=(",", ":"))


def _record(gates: dict[str, Any], recalibrated: bool = False) -> DecisionRecord:
    d = Decision("m", {k: NoulAnswer(0.9) for k in KEYS})
    body = decision_record(d, QUESTIONS, gates=gates)  # type: ignore[arg-type]
    if recalibrated:
        body["recalibrated"] = {"file": "cal.json", "sha256": "0" * 64}
    return DecisionRecord.from_body("t\u00e9", None, body)


@pytest.mark.parametrize(
    ("gates", "recalibrated"),
    [
        pytest.param(GATES, False, id="two-gates"),
        pytest.param(GATES, True, id="recalibrated-after-gates"),
        pytest.param({'m\u00e9rge "x"': STRICT}, False, id="non-ascii-quoted-name"),
        pytest.param(
            {"g": Policy([Rule("addresses_task", "h\udc80ld", below=0.95)], "permit")},
            False,
            id="lone-surrogate-action",
        ),
    ],
)
@pytest.mark.parametrize("codec", ["jsonl", "json"])
def test_gated_records_keep_their_bytes_through_the_prepared_text(
    gates: dict[str, Any], recalibrated: bool, codec: str
) -> None:
    """Issue 35, Speed ("gates add <= 5% to batch's CPU per record"): the JSON codecs write a
    record's gates from text prepared per gate and outcome, "without changing a byte of
    output" (the brief): each line is the encoder's own over ``to_object()``."""
    from toolnexus.records.codec import codec_for

    record = _record(gates, recalibrated)
    assert type(record.gates).__name__ == "GateOutcomes"
    line = codec_for(codec).encode(record, first=False)
    lead = b"," if codec == "json" else b""
    obj = record.to_object()
    try:  # the codecs' rule: UTF-8, and a lone surrogate written escaped
        whole = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    except UnicodeEncodeError:
        whole = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    assert line == lead + whole


def test_the_json_codecs_write_the_prepared_text() -> None:
    """The prepared text is what is written (not the objects encoded again): a record whose
    text says otherwise shows it."""
    from toolnexus.records.codec import JsonlCodec

    record = _record(GATES)
    assert record.gates is not None
    object.__setattr__(record.gates, "json", '{"merge":"prepared"}')
    assert JsonlCodec().encode(record).endswith(b',"gates":{"merge":"prepared"}}\n')


def test_a_run_decides_noul_gates_without_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35, Speed ("gates add <= 5% to batch's CPU per record"): a record of noul answers
    builds no GateResult; its gates are read with the cut-points and reasons prepared once."""
    calls = []
    real = PolicyClass.decide

    def counted(self: Policy, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PolicyClass, "decide", counted)
    gates = GateSet(GATES)
    rng = random.Random(5)
    for _ in range(200):
        d = Decision("m", {k: NoulAnswer(rng.randint(0, 100) / 100) for k in KEYS})
        decision_record(d, QUESTIONS, validated=True, gates=gates)
    assert calls == []
