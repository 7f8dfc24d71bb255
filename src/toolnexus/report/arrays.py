"""Moved to :mod:`toolnexus.metrics.arrays` (issue 30 item 3); this name is kept only for the
branches in flight that still import it, and goes in the next structure pass."""

from ..metrics.arrays import *  # noqa: F403
from ..metrics.arrays import __all__ as __all__
