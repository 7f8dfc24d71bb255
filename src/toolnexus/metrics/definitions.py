"""The definitions a report's calibration figures are computed under (issue 47): ONE typed
value, :class:`MetricDefinitions`, that ``report``'s options are built from (each field's
``metadata["option"]`` is its flag), that every output names, and that ``compare`` reuses.
Pure: no I/O; numpy is imported by the functions that compute.

The defaults are the report's historic definitions (issue 12), so a report without these
options has the digits it always had. The definitions:

- ECE bins (``ece_bins``, ``ece_scheme``, ``ece_edges``): ``width`` bins have the edges
  ``k / N``; ``mass`` bins have the edges ``numpy.quantile(p, k / N)`` over the sample, repeated
  edges merged (so tied probabilities always share one bin, and there may be fewer than ``N``).
  ``left`` edges make bins ``[lo, hi)`` with the top value in the last bin; ``right`` edges make
  the first bin ``[lo, hi]`` and the rest ``(lo, hi]``. The ECE is
  ``sum_b |sum(y)_b - sum(p)_b| / N`` over the bins.
- what is binned (``ece_of``): ``top`` is the top label's probability against whether it was
  right (noul: ``max(p, 1 - p)`` against whether that side, yes for ``p >= 0.5``, was right);
  ``class`` is the mean over the offered classes (noul: yes and no) of the one-vs-rest ECE;
  ``yes`` is a noul's ``p`` against its label (choice and score have no yes: they take ``top``);
  ``auto`` is ``yes`` for noul and ``top`` for choice and score.
- ``log_floor``: every probability floored at ``P`` and the row renormalised before any log
  (``nll`` and every temperature fit). Without it ``nll`` is ``log_loss`` (clipped at 1e-15),
  and a temperature is fitted at the floor 1e-15.
- ``floor_draws`` and ``seed``: the noise floor's label draws and the seed of every random
  draw (the floor's and the bootstrap interval's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

__all__ = [
    "DEFAULT_DEFINITIONS",
    "EDGES",
    "OF",
    "SCHEMES",
    "MetricDefinitions",
    "Option",
    "bin_edges",
    "bin_of",
    "binned_sums",
    "floored_rows",
    "label_probability",
]

SCHEMES = ("width", "mass")
EDGES = ("left", "right")
OF = ("auto", "top", "class", "yes")
#: The floor of a temperature fit when no ``--log-floor`` is given: log_loss's clip.
NO_FLOOR = 1e-15


@dataclass(frozen=True)
class Option:
    """How a definition is given on the command line: its flag, metavar and help."""

    flag: str
    help: str
    metavar: str | None = None


def _option(default: Any, flag: str, help_text: str, metavar: str | None = None) -> Any:
    return field(default=default, metadata={"option": Option(flag, help_text, metavar)})


@dataclass(frozen=True)
class MetricDefinitions:
    """Which definition of each calibration figure a report computes (see the module
    docstring); the JSON's ``definitions`` object names them."""

    ece_bins: int = _option(10, "--ece-bins", "ECE bins (default 10).", "N")
    ece_scheme: str = _option(
        "width",
        "--ece-scheme",
        "width: equal-width bins k/N (default); mass: equal-mass bins over the sample's "
        "quantiles, tied probabilities in one bin.",
        "width|mass",
    )
    ece_edges: str = _option(
        "left",
        "--ece-edges",
        "left: bins [lo, hi), 1.0 in the last (default); right: the first bin closed, the "
        "rest (lo, hi].",
        "left|right",
    )
    ece_of: str = _option(
        "auto",
        "--ece-of",
        "What the ECE bins: top (the top label's probability against correctness; noul "
        "max(p, 1-p)), class (mean one-vs-rest ECE over the offered classes), yes (noul p "
        "against the label), auto (default: noul yes, choice and score top).",
        "auto|top|class|yes",
    )
    log_floor: float | None = _option(
        None,
        "--log-floor",
        "Floor probabilities at P and renormalise before any log: nll and every temperature "
        "fit (default: nll is log_loss, clipped at 1e-15).",
        "P",
    )
    floor_draws: int = _option(
        1000, "--floor-draws", "Label draws of the ECE's noise floor (default 1000).", "N"
    )
    seed: int = _option(0, "--seed", "The seed of every random draw (default 0).", "S")
    fit_temperature: bool = _option(
        False,
        "--fit-temperature",
        "Per question (noul too) and pooled: the single temperature minimising nll at the "
        "log floor (> 1 over-confident, < 1 under-confident); a diagnostic that writes nothing.",
    )
    pool: bool = _option(
        False,
        "--pool",
        "One block over every labelled answer of every question: accuracy, nll, top-label "
        "ECE with its floor (noul as a two-class distribution).",
    )

    def problem(self) -> str | None:
        """What is wrong with these definitions, in the words of their flags; ``None``."""
        if isinstance(self.ece_bins, bool) or not 1 <= self.ece_bins <= 1000:
            return f"--ece-bins takes 1..1000 bins, got {self.ece_bins}"
        for name, allowed in (("ece_scheme", SCHEMES), ("ece_edges", EDGES), ("ece_of", OF)):
            value = getattr(self, name)
            if value not in allowed:
                flag = "--" + name.replace("_", "-")
                return f"{flag} takes {' or '.join(allowed)}, got {value!r}"
        if self.log_floor is not None and not 0.0 < self.log_floor < 0.5:
            return f"--log-floor takes a probability in (0, 0.5), got {self.log_floor}"
        if not 1 <= self.floor_draws <= 1_000_000:
            return f"--floor-draws takes 1..1000000 draws, got {self.floor_draws}"
        if not 0 <= self.seed < 2**63:
            return f"--seed takes a non-negative integer, got {self.seed}"
        return None

    @property
    def historic_bins(self) -> bool:
        """The report's own 10 equal-width left-closed bins (its fast, bit-stable path)."""
        return (self.ece_bins, self.ece_scheme, self.ece_edges) == (10, "width", "left")

    def of(self, qtype: str) -> str:
        """What the ECE of a ``qtype`` question bins: ``top``, ``class`` or ``yes``."""
        if self.ece_of == "auto" or (self.ece_of == "yes" and not _probability(qtype)):
            return "yes" if _probability(qtype) else "top"
        return self.ece_of

    def historic(self, qtype: str) -> bool:
        """Whether a ``qtype`` question's ECE is the report's historic one."""
        return self.historic_bins and self.of(qtype) == ("yes" if _probability(qtype) else "top")

    def floor(self) -> float:
        """The floor a log or a temperature fit uses."""
        return NO_FLOOR if self.log_floor is None else self.log_floor

    def describe(self) -> str:
        """One line naming every definition, as the table and the HTML page print it."""
        floor = "none" if self.log_floor is None else f"{self.log_floor:g}"
        return (
            f"definitions: ece {self.ece_bins} {self.ece_scheme} bins, {self.ece_edges} edges, "
            f"of {self.ece_of}; log floor {floor}; floor {self.floor_draws} draws; seed "
            f"{self.seed}"
        )

    def flags(self) -> list[str]:
        """The options that give these definitions, for a message or a docs example."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            flag = f.metadata["option"].flag
            out.append(flag if value is True else f"{flag} {value}")
        return out


DEFAULT_DEFINITIONS = MetricDefinitions()


def bin_edges(p: Floats, d: MetricDefinitions) -> Floats:
    """The bin edges of the sample ``p`` under ``d`` (``width``: ``k / N``; ``mass``: the
    sample's quantiles, repeated edges merged)."""
    import numpy as np

    n_bins = d.ece_bins
    if d.ece_scheme == "width" or not len(p):
        return np.arange(n_bins + 1, dtype=np.float64) / n_bins
    return np.unique(np.quantile(p, np.arange(n_bins + 1, dtype=np.float64) / n_bins))


def bin_of(p: Floats, edges: Floats, d: MetricDefinitions) -> npt.NDArray[np.intp]:
    """Each ``p``'s bin among ``edges`` (values beyond the outer edges go to the outer bins)."""
    import numpy as np

    inner = edges[1:-1]
    if d.ece_edges == "left":  # [lo, hi): a value on an edge opens the bin above it
        return np.searchsorted(inner, p, side="right").astype(np.intp)
    return np.searchsorted(inner, p, side="left").astype(np.intp)


def binned_sums(
    y: Floats, p: Floats, d: MetricDefinitions
) -> tuple[Floats, list[int], list[float], list[float]]:
    """The edges, and per bin the count, the sum of ``p`` and the sum of ``y``."""
    import numpy as np

    edges = bin_edges(p, d)
    b = bin_of(p, edges, d)
    size = max(len(edges) - 1, 1)
    return (
        edges,
        np.bincount(b, minlength=size).tolist(),
        np.bincount(b, weights=p, minlength=size).tolist(),
        np.bincount(b, weights=y, minlength=size).tolist(),
    )


def ece(y: Floats, p: Floats, d: MetricDefinitions) -> float | None:
    """``sum_b |sum(y)_b - sum(p)_b| / N`` over ``d``'s bins; ``None`` with no data."""
    if not len(p):
        return None
    _, _, sum_p, sum_y = binned_sums(y, p, d)
    return sum(abs(a - b) for a, b in zip(sum_y, sum_p, strict=True)) / len(p)


def floored_rows(rows: Floats, floor: float, labels: Any = None) -> Floats:
    """``rows`` (records, classes) floored at ``floor`` and each renormalised to sum 1. A class
    a record was not offered (NaN, :func:`padded`) stays 0, unless it is that record's label
    (``labels``): a label outside the offered options counts as offered with 0."""
    import numpy as np

    absent = np.isnan(rows)
    if labels is not None and absent.any():
        absent[np.arange(len(rows)), np.asarray(labels, dtype=np.intp)] = False
    r = np.where(absent, 0.0, np.maximum(np.nan_to_num(rows), floor))
    out: Floats = r / r.sum(axis=1, keepdims=True)
    return out


def label_probability(rows: Floats, labels: Any, floor: float) -> Floats:
    """Each record's floored, renormalised probability of its label."""
    import numpy as np

    floored = floored_rows(rows, floor, labels)
    out: Floats = floored[np.arange(len(floored)), np.asarray(labels, dtype=np.intp)]
    return out


def padded(rows: Sequence[Sequence[float]], width: int) -> Floats:
    """Probability rows as one (records, width) array; a class a row lacks (not offered to
    that record) is NaN, so a floor leaves it out (:func:`floored_rows`)."""
    import numpy as np

    values = getattr(rows, "values", None)
    if values is not None and getattr(rows, "width", 0) == width and width:
        out: Floats = np.array(values, dtype=np.float64).reshape(-1, width)
        return out
    full = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        full[i, : len(r)] = r
    return full


def _probability(qtype: str) -> bool:
    """Whether a ``qtype`` answer is one probability (a noul: its ECE can bin ``p(yes)``)."""
    from ..core import registry

    return registry.find(qtype) is not None and registry.answers_probability(qtype)
