"""Moved to :mod:`toolnexus.metrics.measures` (issue 30 item 3); this name is kept only for the
branches in flight that still import it, and goes in the next structure pass."""

from ..metrics.measures import *  # noqa: F403
from ..metrics.measures import __all__ as __all__
