import asyncio

from toolnexus import (
    ChoiceQuestion,
    ClassifierError,
    NoulCriteria,
    NoulQuestion,
    ScoreQuestion,
    canonical_request,
    choice_over,
    create_classifier,
)


async def main():
    judge = create_classifier(style="custom", evaluate=lambda state, questions: None)

    # 256 options: one over the cap. The error names the KEY, and no request is sent.
    too_many = ChoiceQuestion("pick one", {f"opt{i}": f"means {i}" for i in range(256)})
    try:
        await judge.evaluate("s", {"route": too_many})
        raise AssertionError("expected a ClassifierError")
    except ClassifierError as e:
        assert "'route'" in str(e) and "255" in str(e)

    # A one-level rubric is under the floor of 2.
    try:
        await judge.evaluate("s", {"urgency": ScoreQuestion("how urgent?", ["only level"])})
        raise AssertionError("expected a ClassifierError")
    except ClassifierError as e:
        assert "'urgency'" in str(e) and "2..10" in str(e)

    # Absent criteria is NOT empty criteria: one omits the field, the other sends two empty strings.
    absent = canonical_request("m", {"q": NoulQuestion("holds?")})
    empty = canonical_request("m", {"q": NoulQuestion("holds?", NoulCriteria())})
    assert b"criteria" not in absent
    assert b'"criteria":{"false":"","true":""}' in empty

    # Object keys sort in ASCII order; a score rubric's ARRAY order is its numbering and survives.
    rubric = canonical_request("m", {"u": ScoreQuestion("how urgent?", ["zebra", "alpha"])})
    assert b'"criteria":["zebra","alpha"]' in rubric

    # choice_over builds the same question from any (name, description) pairs you already have.
    assert canonical_request("m", {"r": choice_over("which?", {"b": "means b", "a": "means a"})}) == \
        canonical_request("m", {"r": ChoiceQuestion("which?", {"a": "means a", "b": "means b"})})

    print("ok: both limits named their key; absent != empty; rubric order preserved")


asyncio.run(main())
