import asyncio

from toolnexus import (
    ChoiceAnswer,
    ChoiceQuestion,
    Decision,
    create_classifier,
)

EVENTS = []

BAD = ChoiceQuestion("Which desk should own this ticket?", {"billing": "billing", "technical": "technical"})
GOOD = ChoiceQuestion(
    "Which desk should own this ticket?",
    {
        "billing": "own it here when the problem is money that moved",
        "technical": "own it here when the problem is the product itself",
    },
)


def stub(state, questions):
    return Decision(
        model="stub",
        answers={
            k: ChoiceAnswer(choice="billing", probabilities={"billing": 0.5, "technical": 0.5}, confidence=0.5)
            for k in questions
        },
        calibrated=False,
    )


async def main():
    judge = create_classifier(style="custom", evaluate=stub, on_metric=EVENTS.append)

    await judge.evaluate("charged twice", {"department": BAD, "fine": GOOD})
    await judge.evaluate("charged twice", {"department": BAD, "fine": GOOD})   # same key again

    warnings = [e for e in EVENTS if e["event"] == "classifier.warning"]
    assert len(warnings) == 1                     # ONCE per question key per classifier
    assert warnings[0]["question"] == "department"
    assert "error" not in warnings[0]             # advisory, never a failure
    assert "own its" not in warnings[0]["warning"]  # nothing was repaired or rewritten

    print("ok:", len(warnings), "warning for", warnings[0]["question"])


asyncio.run(main())
