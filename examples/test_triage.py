# examples/test_triage.py
from toolnexus.pytest_plugin import assert_answer

TICKET = (
    "Ticket 4021: my card was charged twice for the annual plan and I would like the money back."
)


def test_a_double_charge_goes_to_billing(toolnexus_classifier, toolnexus_questions):
    questions = toolnexus_questions("questions/support-triage.yaml")
    decision = toolnexus_classifier.evaluate(TICKET, questions)
    assert_answer(decision, "department", choice="billing", min_confidence=0.6)
    assert_answer(decision, "wants_money_back", band="yes")
