"""The backends table (seed 004 ``backends``), as data, and how a classifier resolves its row.

Each row is a PRESET that sets ``base_url`` + ``model`` + ``api_key_env`` as a unit, plus the wire
it speaks, whether it sends the ``TypeSafe-Danger-Zone-Images`` header, and ``supports(model)``,
the image column. ``custom`` has no base URL and no ``supports``: the caller declares both.

The table is a fail-fast for WHAT THE TABLE SAYS, never a claim about the vendor; a classifier's
``supports={"images": True}`` overrides it. Every value below is a PROPOSED default, owner to
confirm (seed 004: "Every default here is a PROPOSED default"). Facts vs proposals, from
``tests/fixtures/reference/system-one-wire.md``:

- ``typesafe``: the direct API, ``https://api.typesafe.ai/v1`` (fact), or ``$TYPESAFE_BASE_URL``
  + ``/v1`` (not doubled when it ends in ``/v1``) when that is set and no ``base_url`` is
  given: the official SDK reads the same
  variable as a host root and appends ``/v1/systemone`` (fact), so one variable points both at
  one server (e.g. ``toolnexus serve``). Images only on Jev 1.14 and
  ``jev-preview`` (proposal: the wire notes call images "Jev 1.14, experimental").
- ``openrouter``: ``https://openrouter.ai/api/v1`` and the ``typesafe/jev-1.13`` spelling (facts);
  ``OPENROUTER_API_KEY`` (proposal, the name OpenRouter's own docs use); no images (proposal).
- ``cloudflare``: account- and gateway-scoped; the ``/typesafe`` provider path is NOT confirmed
  (proposal), and so are the ``CLOUDFLARE_ACCOUNT_ID`` / ``CLOUDFLARE_GATEWAY_ID`` names, which
  expand at call time. The gateway forwards the TypeSafe key (proposal). No images (proposal).
- ``vercel``: ``https://ai-gateway.vercel.sh/typesafe/v1`` (fact); ``AI_GATEWAY_API_KEY``
  (proposal, the name Vercel's gateway docs use); no images (proposal).
- ``custom``: ``base_url`` and ``supports`` are required.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core import (
    BASE_URL_ENV,
    DEFAULT_API_KEY_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    ConfigError,
    redact_url,
)

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "IMAGES_HEADER",
    "Backend",
    "ResolvedBackend",
    "resolve_backend",
]

#: TypeSafe's opt-in for image ("danger zone") input.
IMAGES_HEADER = "TypeSafe-Danger-Zone-Images"

Supports = Callable[[str], Mapping[str, bool]]


@dataclass(frozen=True)
class Backend:
    """One row of the table. ``base_url`` is ``None`` only for ``custom``."""

    name: str
    base_url: str | None
    model: str
    api_key_env: str
    wire: str
    images_header: bool
    supports: Supports | None


def _typesafe_images(model: str) -> Mapping[str, bool]:
    return {"images": model == "jev-preview" or model.startswith("jev-1.14")}


def _no_images(model: str) -> Mapping[str, bool]:
    return {"images": False}


#: The rows, in the order every error message lists them (seed 004 ``backend-names``).
BACKENDS: tuple[Backend, ...] = (
    Backend(
        name="typesafe",
        base_url=DEFAULT_BASE_URL,
        model=DEFAULT_MODEL,
        api_key_env=DEFAULT_API_KEY_ENV,
        wire="systemone",
        images_header=True,
        supports=_typesafe_images,
    ),
    Backend(
        name="openrouter",
        base_url="https://openrouter.ai/api/v1",
        model="typesafe/jev-1.13",
        api_key_env="OPENROUTER_API_KEY",
        wire="systemone",
        images_header=False,
        supports=_no_images,
    ),
    Backend(
        name="cloudflare",
        base_url=(
            "https://gateway.ai.cloudflare.com/v1/${CLOUDFLARE_ACCOUNT_ID}/"
            "${CLOUDFLARE_GATEWAY_ID}/typesafe"
        ),
        model=DEFAULT_MODEL,
        api_key_env=DEFAULT_API_KEY_ENV,
        wire="systemone",
        images_header=False,
        supports=_no_images,
    ),
    Backend(
        name="vercel",
        base_url="https://ai-gateway.vercel.sh/typesafe/v1",
        model=DEFAULT_MODEL,
        api_key_env="AI_GATEWAY_API_KEY",
        wire="systemone",
        images_header=False,
        supports=_no_images,
    ),
    Backend(
        name="custom",
        base_url=None,
        model=DEFAULT_MODEL,
        api_key_env=DEFAULT_API_KEY_ENV,
        wire="systemone",
        images_header=False,
        supports=None,
    ),
)

#: The five backend values, in the order every error message lists them.
BACKEND_NAMES: tuple[str, ...] = tuple(b.name for b in BACKENDS)
_BY_NAME = {b.name: b for b in BACKENDS}

# A TypeSafe-direct spelling: "jev-latest", "jev-preview", "jev-1.13", "jev-1.13.0", ...
_TYPESAFE_SPELLING = re.compile(r"jev-(?:(\d+)\.(\d+)(?:\.\d+)?|[a-z]+)(?:-.*)?")


@dataclass(frozen=True)
class ResolvedBackend:
    """A row after the caller's explicit options won. ``base_url`` may still hold ``${NAME}``
    references: they expand at call time, and errors show them unexpanded."""

    name: str
    base_url: str
    model: str
    api_key_env: str
    wire: str
    #: Send ``TypeSafe-Danger-Zone-Images: true`` with a request that carries assets.
    images_header: bool
    #: Whether this backend takes images at all (the row's column, or ``supports=``).
    images: bool


def _openrouter_spelling(model: str) -> str | None:
    """What to use instead of a TypeSafe-only model spelling on OpenRouter, or None when the
    spelling is fine there."""
    m = _TYPESAFE_SPELLING.fullmatch(model)
    if m is None:
        return None
    if m.group(1) is not None:
        return f"typesafe/jev-{m.group(1)}.{m.group(2)}"
    return _BY_NAME["openrouter"].model


def _default_base_url(row: Backend) -> str | None:
    """The row's base URL; for typesafe, ``$TYPESAFE_BASE_URL`` + ``/v1`` when it is set, read
    as the official SDK reads it (a host root: ``http://127.0.0.1:8000`` means
    ``http://127.0.0.1:8000/v1/systemone`` for both). A value that already ends in ``/v1`` is
    taken as it is: ``…/v1`` once gave ``POST …/v1/v1/systemone: 404`` (issue 43 item 8)."""
    root = os.environ.get(BASE_URL_ENV) if row.name == "typesafe" else None
    if not root:
        return row.base_url
    root = root.rstrip("/")
    return root if root.endswith("/v1") else f"{root}/v1"


def resolve_backend(
    backend: str = "typesafe",
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    supports: Mapping[str, bool] | None = None,
) -> ResolvedBackend:
    """The row named ``backend`` (for typesafe, with ``$TYPESAFE_BASE_URL``) with an explicit
    ``base_url`` / ``model`` / ``api_key_env`` winning over it, and ``supports`` overriding its
    image column. Raises ConfigError for an unknown backend, a ``custom`` backend without
    ``base_url`` and ``supports``, and a TypeSafe-only model spelling sent to OpenRouter (naming
    the spelling to use instead)."""
    row = _BY_NAME.get(backend) if isinstance(backend, str) else None
    if row is None:
        raise ConfigError(
            f"classifier: unknown backend {backend!r}: use one of {', '.join(BACKEND_NAMES)}"
        )
    if row.name == "custom":
        missing = [n for n, v in (("base_url", base_url), ("supports", supports)) if v is None]
        if missing:
            raise ConfigError(
                "classifier: backend 'custom' requires "
                + " and ".join(f"{n}=" for n in missing)
                + ' (e.g. base_url="https://host/v1", supports={"images": False})'
            )
    url = base_url if base_url is not None else _default_base_url(row)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        # Shown without any user:pass@ it carries: a credential never reaches a message.
        shown = redact_url(url) if isinstance(url, str) else url
        raise ConfigError(
            f"classifier: base_url must start with http:// or https://, got {shown!r}"
        )
    chosen_model = model if model is not None else row.model
    if not isinstance(chosen_model, str) or not chosen_model:
        raise ConfigError(f"classifier: model must be a non-empty string, got {chosen_model!r}")
    key_env = api_key_env if api_key_env is not None else row.api_key_env
    if not isinstance(key_env, str) or not key_env:
        raise ConfigError(
            "classifier: api_key_env must be the NAME of an environment variable, "
            f"got {type(key_env).__name__}"
        )
    if row.name == "openrouter":
        instead = _openrouter_spelling(chosen_model)
        if instead is not None:
            raise ConfigError(
                f"classifier: backend 'openrouter' does not know the TypeSafe-only model "
                f"spelling {chosen_model!r}: use {instead!r} instead"
            )
    if supports is not None:
        images = supports.get("images")
        if not isinstance(images, bool):
            raise ConfigError('classifier: supports must look like {"images": true|false}')
    else:
        assert row.supports is not None  # only custom lacks it, and custom required it above
        images = bool(row.supports(chosen_model).get("images", False))
    return ResolvedBackend(
        name=row.name,
        base_url=url.rstrip("/"),
        model=chosen_model,
        api_key_env=key_env,
        wire=row.wire,
        # The header goes with a request's assets when the row sends it, or when the caller
        # declared image support itself (supports={"images": True}): that declaration is the
        # caller's opt-in, and the header is how the System One wire opts in.
        images_header=images and (row.images_header or supports is not None),
        images=images,
    )
