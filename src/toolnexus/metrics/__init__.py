"""Metric primitives below both ``calibration/`` and ``report/`` (issue 30 item 3: "metric
primitives move below both calibration/ and report/"): ``measures`` (the ONE definition of each
accuracy and calibration metric, and the bins and thresholds they return), ``reliability`` (the
calibration bins and the ECE, re-exported by ``measures``) and ``arrays`` (how they read the
accumulators' arrays with the loops' exact bits). Pure: no I/O, and nothing of the rest of the
package, so ``calibration`` and ``report`` both import them and neither the other.
"""
