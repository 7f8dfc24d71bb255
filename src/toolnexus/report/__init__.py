"""Run statistics, calibration metrics and the HTML report behind ``toolnexus report``.

- ``metrics``: the metric definitions (pure functions over sequences).
- ``runs``: streaming readers for batch output (JSONL, JSON, CSV); ``labels``: labels files.
- ``reader``: a run into ``RunStats``, long JSONL runs in chunks counted side by side.
- ``accumulators``, ``ranked``: per-question accumulators; a record is counted and dropped.
- ``aggregation``: ``RunStats``, everything counted over one run.
- ``compare``: two runs side by side.
- ``conditions``: ``--fail-on`` over a report.
- ``build``: the report object every format renders.
- ``html``: the self-contained HTML page (charts drawn by matplotlib, imported only there).

No typer and no rich here: the CLI renders.
"""
