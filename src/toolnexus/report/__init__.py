"""Run statistics, calibration metrics and the HTML report behind ``toolnexus report``.

- ``model``: the typed :class:`~toolnexus.report.model.Report` (frozen dataclasses) that every
  output reads by attribute; its fields are the JSON's keys.
- ``metrics``: the one definition of each metric, over ``(y_true, y_prob)`` arrays in
  scikit-learn's argument order, used by the accumulators.
- ``runs``: streaming readers for batch output (JSONL, JSON, CSV); ``labels``: labels files.
- ``reader``: a run into ``RunStats``, long JSONL runs in chunks counted side by side.
- ``accumulators``, ``ranked``: per-question accumulators; a record is counted and dropped.
- ``aggregation``: ``RunStats``, everything counted over one run.
- ``compare``: two runs side by side.
- ``conditions``: ``--fail-on`` over a report.
- ``build``: ``build_report``, the :class:`Report` every format renders.
- ``html``: the self-contained HTML page (charts drawn by matplotlib, imported only there).

No typer and no rich here: the CLI renders.
"""
