"""Calibration you can act on (issue 24): honest intervals, a proper score for rubrics, and
recalibration maps that ``eval`` and ``batch`` apply.

- ``uncertainty``: the 10-bin ECE vectorised, its bootstrap interval (``ece_interval``) and the
  noise floor a perfectly calibrated model shows on the same probabilities (``ece_null``).
- ``scores``: the ranked probability score for score questions (``rps``).
- ``choice``: per-option one-vs-rest reliability, accuracy against coverage.
- ``transforms``: the maps themselves (Platt, isotonic, temperature) and the clip before any log.
- ``fit``: fitting the maps, picked and measured by k-fold cross-validation.
- ``maps``: the calibration map file: load, save, validate, refuse a mismatch, apply.
- ``thresholds``: a consistent (yes, no) pair for a target precision, the threshold table.

``uncertainty`` and ``fit`` import numpy; ``scores``, ``choice`` and ``thresholds`` take it
(through ``metrics.measures``) only when a labelled metric is computed; ``transforms`` and
``maps`` are pure Python, so applying a map in ``eval``/``batch`` and the unlabelled report never
load it. This ``__init__`` imports nothing, for the same reason.
"""
