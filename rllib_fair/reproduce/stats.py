"""Means with 95% confidence intervals over seeds, and one verdict per claim.

Every interval is Student's t interval of a mean over seeds (two-sided, 95%): mean +-
t(0.975, n - 1) * s / sqrt(n). A claim is decided on the interval of the quantity it is
about, at the 5% level:

* **comparison** ``a < b`` (or ``a > b``) on a metric: where the two methods share at
  least two seeds, the interval of the mean paired difference ``a - b`` over the shared
  seeds (a paired t-test); otherwise Welch's interval of the difference of the means
  (Welch's t-test). *holds* when the interval lies on the claimed side of 0, *does not
  hold* when it lies on the other side, *inconclusive* when it contains 0;
* **threshold** ``a <= x`` (or ``a >= x``): the interval of the method's mean (a one-
  sample t-test against ``x``): *holds* when it lies on the claimed side of ``x`` (the
  bound itself included), *does not hold* when it lies strictly on the other side,
  *inconclusive* when it straddles ``x``.

With fewer than two values on a side the interval is undefined and the verdict is
*inconclusive*. A claim over several settings *holds* when it holds on each, *does not
hold* when it fails on any, and is *inconclusive* otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"

#: The confidence level of every interval.
LEVEL = 0.95


def _t_quantile(df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + LEVEL / 2, df))


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% interval over ``n`` values (``half`` is NaN below two values)."""

    mean: float
    half: float
    n: int

    @property
    def low(self) -> float:
        """The interval's lower end."""
        return self.mean - self.half

    @property
    def high(self) -> float:
        """The interval's upper end."""
        return self.mean + self.half

    @property
    def defined(self) -> bool:
        """Whether the interval exists (two values or more)."""
        return self.n >= 2 and math.isfinite(self.half)

    def text(self, digits: int = 4) -> str:
        """``mean ± half`` to ``digits`` significant digits (``mean`` alone for one value)."""
        if self.n == 0:
            return "-"
        if not self.defined:
            return f"{self.mean:.{digits}g}"
        return f"{self.mean:.{digits}g} ± {self.half:.{digits}g}"


def mean_interval(values) -> Interval:
    """Student's t interval of the mean of ``values`` (NaN values are an error)."""
    x = np.asarray(list(values), dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError(f"values: {x.tolist()!r} contain NaN; valid: finite numbers")
    n = len(x)
    if n == 0:
        return Interval(float("nan"), float("nan"), 0)
    if n == 1:
        return Interval(float(x[0]), float("nan"), 1)
    half = _t_quantile(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(float(x.mean()), half, n)


def welch_interval(a, b) -> Interval:
    """Welch's 95% interval of ``mean(a) - mean(b)`` (``n``: the smaller sample's size)."""
    a = np.asarray(list(a), dtype=np.float64)
    b = np.asarray(list(b), dtype=np.float64)
    n = min(len(a), len(b))
    if n < 2:
        diff = float(a.mean() - b.mean()) if len(a) and len(b) else float("nan")
        return Interval(diff, float("nan"), n)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return Interval(float(a.mean() - b.mean()), 0.0, n)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return Interval(float(a.mean() - b.mean()), _t_quantile(df) * se, n)


@dataclass(frozen=True)
class Verdict:
    """The verdict on one setting: the interval it rests on and the test's name."""

    verdict: str
    interval: Interval
    test: str


def compare(a: dict[int, float], b: dict[int, float], kind: str) -> Verdict:
    """Decides ``a < b`` (``kind="less"``) or ``a > b`` (``"greater"``) from values by seed."""
    shared = sorted(set(a) & set(b))
    if not a or not b:
        return Verdict(INCONCLUSIVE, Interval(float("nan"), float("nan"), 0), "no cells yet")
    if len(shared) >= 2:
        interval = mean_interval([a[s] - b[s] for s in shared])
        test = f"paired t-test over {len(shared)} shared seeds"
    else:
        interval = welch_interval(a.values(), b.values())
        test = f"Welch t-test ({len(a)} and {len(b)} seeds)"
    if not interval.defined:
        return Verdict(INCONCLUSIVE, interval, test + " (too few seeds)")
    return Verdict(difference_verdict(interval.low, interval.high, kind), interval, test)


def difference_verdict(low: float, high: float, kind: str) -> str:
    """The verdict on ``a < b`` or ``a > b`` from the 95% interval of ``a - b``.

    ``kind`` is ``"less"`` or ``"greater"``. *holds* when ``[low, high]`` lies on the
    claimed side of 0, *does not hold* when it lies strictly on the other side,
    *inconclusive* when it contains 0 (an interval of exactly 0, equal values, included).
    """
    below, above = high < 0.0, low > 0.0
    if kind == "less":
        return HOLDS if below else FAILS if above else INCONCLUSIVE
    if kind == "greater":
        return HOLDS if above else FAILS if below else INCONCLUSIVE
    raise ValueError(f"kind: {kind!r} is invalid; valid: less, greater")


def threshold(values: dict[int, float], bound: float, kind: str) -> Verdict:
    """Decides ``mean <= bound`` (``kind="at_most"``) or ``mean >= bound`` (``"at_least"``)."""
    interval = mean_interval(values.values())
    if interval.n == 0:
        return Verdict(INCONCLUSIVE, interval, "no cells yet")
    test = f"one-sample t-test against {bound:g} over {interval.n} seeds"
    if not interval.defined:
        return Verdict(INCONCLUSIVE, interval, test + " (too few seeds)")
    if kind == "at_most":
        holds, fails = interval.high <= bound, interval.low > bound
    elif kind == "at_least":
        holds, fails = interval.low >= bound, interval.high < bound
    else:
        raise ValueError(f"kind: {kind!r} is invalid; valid: at_most, at_least")
    return Verdict(HOLDS if holds else FAILS if fails else INCONCLUSIVE, interval, test)


def overall(verdicts: list[str]) -> str:
    """A claim's verdict over its settings."""
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == FAILS for v in verdicts):
        return FAILS
    return INCONCLUSIVE
