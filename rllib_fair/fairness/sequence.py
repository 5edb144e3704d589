"""Per-step disparity of an episode that arrives in chunks.

RLlib hands episodes to callbacks in chunks (an episode longer than one sample call is
cut and continued in the next). :func:`running_disparity` gives Delta_t for every step
of a chunk at once with :func:`rllib_fair.fairness.ledger.disparity_series` and returns
a small carry that continues the computation on the next chunk of the same episode, so
the result equals :class:`~rllib_fair.fairness.ledger.WindowedDisparity` updated one
step at a time over the whole episode.

The carry works because every notion's supply and demand are linear in the counts: the
steps before the chunk enter as one summed counts row (running gap since the episode
start, ``window=None``) or as the last ``window - 1`` count rows (sliding window).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rllib_fair.fairness.ledger import disparity_series
from rllib_fair.fairness.notions import Notion
from rllib_fair.fairness.selective import running_selective_disparity


@dataclass
class DisparityCarry:
    """What one chunk of an episode leaves for the next.

    Attributes:
        total: counts summed over all steps so far, ``[NUM_FIELDS, G]`` (the episode's
            own ledger: its gap is the episode's long-term bias).
        tail: the last ``window - 1`` count rows (sliding window only, else None).
        num_steps: steps seen since the episode start.
        last: the disparity after the last step seen (0.0 before any step).
    """

    total: np.ndarray
    tail: np.ndarray | None
    num_steps: int
    last: float = 0.0


def running_disparity(
    notion: str | Notion,
    counts: np.ndarray,
    *,
    window: int | None = None,
    smoothing: float = 0.0,
    carry: DisparityCarry | None = None,
) -> tuple[np.ndarray, DisparityCarry]:
    """Per-step disparity Delta_t for each step of a chunk, resumable.

    Args:
        notion: fairness notion (object or short name).
        counts: counts of the chunk's steps, ``[T, NUM_FIELDS, G]``.
        window: None for the running gap since the episode start (POCAR), else the
            number of most recent steps the rates are taken over (SELLF).
        smoothing: constant added to every demand (see ``benefit_rates``).
        carry: what the previous chunk of the same episode returned; None at the start.

    Returns:
        ``(gaps, carry)``: ``gaps[t]`` is Delta_t after step t (float64 ``[T]``, never
        NaN), and the carry for the next chunk.
    """
    counts = np.asarray(counts, dtype=np.float64)
    t_len = counts.shape[0]
    if carry is None:
        prefix = counts[:0]
        total = counts.sum(axis=0)
        steps = 0
    elif window is None:
        prefix = carry.total[None]
        total = carry.total + counts.sum(axis=0)
        steps = carry.num_steps
    else:
        prefix = carry.tail
        total = carry.total + counts.sum(axis=0)
        steps = carry.num_steps
    series = disparity_series(
        notion, np.concatenate([prefix, counts], axis=0), window=window, smoothing=smoothing
    )
    tail = None
    if window is not None:
        joined = np.concatenate([prefix, counts], axis=0)
        keep = min(window - 1, joined.shape[0])
        tail = joined[joined.shape[0] - keep :].copy()
    gaps = series[prefix.shape[0] :]
    last = float(gaps[-1]) if t_len else (carry.last if carry is not None else 0.0)
    return gaps, DisparityCarry(total, tail, steps + t_len, last)


def _true_source(notion, counts, *, window, smoothing, carry, steps=None, undefined="exclude"):
    """Per-step disparity from the true counts (every individual's label).

    The ledger's zero-demand convention applies; ``undefined`` is not read.
    """
    return running_disparity(notion, counts, window=window, smoothing=smoothing, carry=carry)


def _selective_source(source: str):
    def fn(notion, counts, *, window, smoothing, carry, steps=None, undefined="exclude"):
        if steps is None:
            raise ValueError(
                f"fairness_disparity_source: {source!r} needs the per-decision group, "
                "decision and label of every step"
            )
        decision = np.asarray(steps["decision"])
        # Only labels the decision-maker observed enter (accepted rows); the rest are
        # never read, whatever the caller passes.
        observed = np.where(decision == 1, np.asarray(steps["label"], dtype=np.float64), 0.0)
        return running_selective_disparity(
            notion,
            steps["group"],
            decision,
            observed,
            steps.get("predicted"),
            window=window,
            source=source,
            signed=False,
            carry=carry,
            undefined=undefined,
        )

    fn.__doc__ = f"Per-step |disparity| from {source} labels (Valdrighi et al., Sec. 3)."
    return fn


#: Where the per-step disparity an algorithm regularises comes from, by name. Every
#: entry is called as ``fn(notion, counts, *, window, smoothing, carry, steps, undefined)``
#: with the chunk's counts ``[T, NUM_FIELDS, G]``, ``steps``: per-step arrays ``group``,
#: ``decision``, ``label`` and (when the module predicts labels) ``predicted``, and
#: ``undefined``: the config's ``fairness_undefined_utility`` (read by the selective
#: sources only); it returns ``(gaps [T], carry)``.
#:
#: * ``"true"``: the environment's true counts (labels of every individual): the oracle.
#: * ``"accepted"``: labels of accepted individuals only, Delta^{A=1} (Valdrighi et al.,
#:   Eq. 2): the naive selective-labels baseline (identically 0 for equal opportunity,
#:   Prop. 3.1).
#: * ``"imputed"``: Y-tilde = A Y + (1 - A) Y-hat with the module's label predictor
#:   (Sec. 3, Theorem 3.1); needs a module that outputs label predictions.
#:
#: The selective sources ignore ``smoothing`` and support the notions of
#: :data:`rllib_fair.fairness.selective.SELECTIVE_NOTIONS`.
DISPARITY_SOURCES: dict = {
    "true": _true_source,
    "accepted": _selective_source("accepted"),
    "imputed": _selective_source("imputed"),
}
#: Sources computed from per-decision labels (two groups, one individual per step).
SELECTIVE_SOURCES = ("accepted", "imputed")


def get_disparity_source(name: str):
    """Returns the per-step disparity function registered as ``name``.

    Raises:
        ValueError: one line naming the bad value and the valid choices.
    """
    if name not in DISPARITY_SOURCES:
        raise ValueError(
            f"fairness_disparity_source: unknown source {name!r}; valid choices: "
            f"{', '.join(sorted(DISPARITY_SOURCES))}"
        )
    return DISPARITY_SOURCES[name]
