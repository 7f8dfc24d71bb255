"""Reading a System One 200 reply: its body as JSON, then as a decision, or one DecisionError.

The error names the endpoint (as configured) and the server's request id, and says what the body
was: empty, truncated or malformed JSON (with where parsing stopped), not JSON at all (its start,
scrubbed), past the JSON limits, or a 200 that carries the server's error instead of a decision
(issue 31 item 8). ``scrub`` is the transport's: what a message quotes from a reply hides every
credential and expanded value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Decision, DecisionError, JsonLimitError, Question, loads, parse_decision
from ..transport import server_message

__all__ = ["decode_decision", "load_response"]


def load_response(
    content: bytes, endpoint: str, request_id: str | None, scrub: Callable[[str], str]
) -> tuple[Any, str]:
    """A 200 body as parsed JSON and its text, or the DecisionError naming the endpoint and
    the request id; ``scrub`` hides secrets in what is quoted. ``packed.py`` decodes a packed
    response from here, per state."""
    rid = f" (request id {request_id})" if request_id else ""
    try:
        # Decoded here, once, as ``loads`` would (UTF-8, an optional BOM dropped).
        bom = content[:3] == b"\xef\xbb\xbf"
        text = content.decode("utf-8-sig") if bom else content.decode("utf-8")
        obj = loads(text)
    except JsonLimitError as e:
        raise DecisionError(
            f"classifier: POST {endpoint}: HTTP 200: the response body is refused: {e}{rid}"
        ) from None
    except (ValueError, UnicodeDecodeError) as e:
        text = content.decode("utf-8", errors="replace")
        if not text.strip():
            what = "the response body is empty"
        elif text.lstrip()[:1] in ("{", "["):
            where = getattr(e, "pos", None)
            at = f"; parsing stopped at byte {where}" if where is not None else ""
            what = f"the response body is truncated or malformed JSON ({len(content)} bytes{at})"
        else:
            start = scrub(text[:40])
            what = f"the response body is not JSON ({len(content)} bytes, starting {start!r})"
        raise DecisionError(f"classifier: POST {endpoint}: HTTP 200: {what}{rid}") from None
    return obj, text


def decode_decision(
    content: bytes,
    endpoint: str,
    request_id: str | None,
    questions: dict[str, Question],
    scrub: Callable[[str], str],
) -> tuple[Decision, str]:
    """The decision in ``content``, and the text it was decoded from (what the cache keeps)."""
    obj, text = load_response(content, endpoint, request_id, scrub)
    rid = f" (request id {request_id})" if request_id else ""
    try:
        return parse_decision(obj, questions), text
    except DecisionError as e:
        if isinstance(obj, dict) and "answers" not in obj and ("error" in obj or "detail" in obj):
            # A 200 that carries an error body: the server's own words, not "response
            # model must be a string, got null" (issue 31 item 8).
            said = server_message(scrub(text))
            raise DecisionError(
                f"classifier: POST {endpoint}: HTTP 200 carries an error, not a decision: "
                f"{said[:300]}{rid}",
                e.key,
            ) from None
        raise DecisionError(
            f"classifier: POST {endpoint}: {e.detail}{rid}",
            e.key,
        ) from None
