"""What the client benches share: one support-triage question set and its states. Not a bench
itself (``make bench`` runs the files whose names do not start with ``_``)."""

from __future__ import annotations

from typing import Any

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a duplicate-charge refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team should handle this?",
        "criteria": {
            "account": "Login and account settings",
            "billing": "Payments and refunds",
            "technical": "Software and hardware problems",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent is this request?",
        "criteria": ["Routine", "Needs attention today", "Service unavailable"],
    },
}


def states(n: int) -> list[dict[str, object]]:
    """``n`` distinct ticket states, each asking for a refund of a double charge."""
    return [
        {"ticket": i, "message": f"Ticket {i}: the terminal charged invoice INV-{i} twice."}
        for i in range(n)
    ]
