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


#: Where the per-step disparity an algorithm regularises comes from. ``"true"`` uses the
#: environment's true counts (labels of every individual). Selective-label variants
#: (disparity from accepted individuals only, or from imputed labels; Valdrighi et al.,
#: Eq. 2 and Sec. 3) register further names here with the same signature.
DISPARITY_SOURCES: dict = {"true": running_disparity}


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
