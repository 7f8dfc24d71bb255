"""The packed path's counting probe: an explicit, documented observer hook on a packed run's
per-state work (issue 45 item 4: "Pack-CPU tests count through a public hook ... not by
patching private classes").

The pack-CPU cuts of issue 32 are pinned by counts (calls made, objects built), never by a
time. The places that count name themselves here by an event name, so a test (or a bench)
counts them through :func:`counting` whatever module, class or helper does the work today; a
refactor or a file move keeps the names. With nobody observing, each place pays one module
attribute read and a compare, no call.

The events, ``(name, value)``:

- ``assets.lift``: ``lift_images`` lifts a state (the state)
- ``assets.walk``: the lift walks one node of a state (the node)
- ``state.walk``: ``check_state`` walks a value for lone surrogates (the value)
- ``validate.answers``: a whole answer set is validated one by one (``validate_answers``,
  the answers), instead of by the per-pack validator
- ``decode.dispatch``: an answer is decoded through the generic per-answer dispatch (its key)
- ``plan.lift``: the plan looks a state's lift up (its index)
- ``plan.fit``: the plan checks whether ``count`` states fit one pack (``count``)
- ``plan.groups``: a batch's requests are planned (the planned groups, in order)
- ``pack.questions``: a pack's questions are derived from the set (the pack's size)
- ``pack.weigh``: a state (or the question set) is encoded to learn its weight (the value)
- ``pack.send``: a planned pack is sent (the planned pack)
- ``pack.emit``: a packed state's ``on_metric`` event is built (the pack's size)
- ``pack.cache_get`` / ``pack.cache_set``: a packed state is looked up in / stored to the
  classifier's cache (the state's index)
- ``batch.state_result``: a batch wraps one decision in a ``StateResult`` (its index)

Pure: the standard library only. Not thread-aware: one observer for the process, set for the
code :func:`observing` wraps (a test, a bench), as a profiler would be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeAlias

__all__ = ["Observer", "counting", "observer", "observing"]

#: ``(event, value) -> None``: told of each event while installed.
Observer: TypeAlias = Callable[[str, Any], None]

#: The installed observer, or None (the default). Read by the places that count.
observer: Observer | None = None


@contextmanager
def observing(fn: Observer) -> Iterator[None]:
    """Install ``fn`` as the observer for the code this wraps (the previous one is restored)."""
    global observer
    previous, observer = observer, fn
    try:
        yield
    finally:
        observer = previous


@contextmanager
def counting() -> Iterator[list[tuple[str, Any]]]:
    """Every event of the code this wraps, in order: ``with counting() as seen: ...``."""
    seen: list[tuple[str, Any]] = []
    with observing(lambda event, value: seen.append((event, value))):
        yield seen
