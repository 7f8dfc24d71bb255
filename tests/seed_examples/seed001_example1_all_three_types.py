import asyncio

from toolnexus import (
    ChoiceQuestion,
    NoulQuestion,
    RecordedDecision,
    ScoreQuestion,
    create_classifier,
)

TICKET = "Ticket 4021: my card was charged twice for the annual plan and I would like the money back."

QUESTIONS = {
    "wants_money_back": NoulQuestion("Is the customer asking for money to be returned?"),
    "department": ChoiceQuestion(
        "Which desk should own this ticket?",
        {
            # Each description says what PICKING that option would MEAN — same template, no ids.
            "billing": "own it here when the problem is money that moved: a duplicate charge, a refund owed",
            "shipping": "own it here when the problem is a physical parcel: a late or damaged delivery",
            "technical": "own it here when the problem is the product itself: a login that fails, a feature that errors",
        },
    ),
    "urgency": ScoreQuestion(
        "How fast does this ticket need a human?",
        [
            "the customer is working normally and is waiting on an answer",
            "the customer is inconvenienced and will chase if nobody replies today",
            "the customer is blocked from working right now",
        ],
    ),
}

RECORDED = RecordedDecision(
    state=TICKET,
    questions=QUESTIONS,
    response={
        "model": "typesafe/jev-1.13-20260917",
        "answers": {
            "wants_money_back": {"type": "noul", "noul": 0.99},
            "department": {
                "type": "choice",
                "choice": "billing",
                "probabilities": {"billing": 1, "shipping": 0, "technical": 0},
                "confidence": 1,
            },
            "urgency": {
                "type": "score",
                "score": 0.49,
                "legend": {
                    "0": "the customer is working normally and is waiting on an answer",
                    "1": "the customer is inconvenienced and will chase if nobody replies today",
                    "2": "the customer is blocked from working right now",
                },
                "probabilities": {"0": 0.52, "1": 0.48, "2": 0},
                "confidence": 0.27,
            },
        },
        "usage": {"input_tokens": 516, "output_tokens": 72},
    },
)


async def main():
    judge = create_classifier(style="static", model="typesafe/jev-1.13", decisions=[RECORDED])
    d = await judge.evaluate(TICKET, QUESTIONS)

    assert d.noul("wants_money_back").noul == 0.99
    assert d.choice("department").choice == "billing"
    assert d.score("urgency").score == 0.49           # between level 0 and level 1

    print("ok:", d.choice("department").choice, "| urgency", d.score("urgency").score)


asyncio.run(main())
