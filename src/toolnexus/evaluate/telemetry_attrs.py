"""The attributes of toolnexus's OpenTelemetry spans and metrics (issue 23, ``telemetry.py``):
what one model at one endpoint shares, built once, and the endpoint's own attributes, never with
a credential. Pure: imports nothing of OpenTelemetry."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["CACHED", "OPERATION", "Shape", "endpoint_attributes"]

#: ``gen_ai.operation.name``: a custom name, since no well-known value fits a classifier.
OPERATION = "systemone"


def endpoint_attributes(url: str) -> dict[str, Any]:
    """``server.address`` / ``server.port`` / ``url.full`` of an endpoint URL, without userinfo,
    query or fragment (a key may sit in any of them). Pass the unexpanded template for
    ``url.full``: an expanded ``${NAME}`` is a secret."""
    parts = urlsplit(url)
    attrs: dict[str, Any] = {}
    if not parts.scheme:
        return attrs  # a custom or static style: no endpoint to name
    if parts.hostname:
        attrs["server.address"] = parts.hostname
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    if port is not None:
        attrs["server.port"] = port
    host = parts.hostname or ""
    shown_port = f":{parts.port}" if _safe_port(parts) else ""
    attrs["url.full"] = f"{parts.scheme}://{host}{shown_port}{parts.path}"
    return attrs


def _safe_port(parts: Any) -> bool:
    try:
        return parts.port is not None
    except ValueError:
        return False


class Shape:
    """The attributes every span and metric of one model at one endpoint shares, built once
    per pair: a classifier asks one model at one endpoint, and building them per evaluate
    (parsing the URL, filtering and merging dicts) was a measured share of the per-request
    cost. The SDK copies what it is given, so these are shared, and never mutated."""

    __slots__ = ("answered", "http", "metric", "name", "span", "starts")

    def __init__(self, provider_name: str, model: str, endpoint: str) -> None:
        self.name = f"{OPERATION} {model}"
        self.span: dict[str, Any] = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": provider_name,
            "gen_ai.request.model": model,
            **endpoint_attributes(endpoint),
        }
        self.http = {k: v for k, v in self.span.items() if k.startswith(("server.", "url."))}
        self.metric = {k: v for k, v in self.span.items() if k != "url.full"}
        self.starts: dict[tuple[int, int], dict[str, Any]] = {}
        self.answered: dict[str, tuple[dict[str, Any], ...]] = {}

    def start(self, questions: int, pack: int) -> dict[str, Any]:
        """An evaluate span's attributes at its start."""
        attrs = self.starts.get((questions, pack))
        if attrs is None:
            attrs = {**self.span, "toolnexus.questions": questions, "toolnexus.pack": pack}
            if len(self.starts) < CACHED:
                self.starts[(questions, pack)] = attrs
        return attrs

    def metrics(self, response_model: str) -> tuple[dict[str, Any], ...]:
        """The metric attributes of an answer from ``response_model``: the duration's, then
        the input and the output tokens'."""
        sets = self.answered.get(response_model)
        if sets is None:
            answered = {**self.metric, "gen_ai.response.model": response_model}
            sets = (
                answered,
                {**answered, "gen_ai.token.type": "input"},
                {**answered, "gen_ai.token.type": "output"},
            )
            if len(self.answered) < CACHED:
                self.answered[response_model] = sets
        return sets


#: How many attribute sets each cache keeps (one classifier needs a handful).
CACHED = 64
