"""Loaded by every Python process a test starts (the test run puts this folder first on
PYTHONPATH): the same network guard as the test process (``tests/netguard.py``)."""

import sys
from pathlib import Path

_tests = str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, _tests)
try:
    import netguard

    netguard.install()
finally:
    sys.path.remove(_tests)
