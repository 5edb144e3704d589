"""The qualification-gain metric block (Lear & Zhang 2025, Sec. 3).

Declared by envs whose step infos carry an individual's qualification gains
(``individual``, ``group``, ``credit_bin``, ``qual_gain``, ``qual_gain_ps`` and
optionally ``qual_gain_pi0``; the env contract of :mod:`rllib_fair.fairness.qualification`).
Each finished episode adds its causal decomposition C = DPE + IPE + SPE for every
V_pi0 estimate (``reference``, ``shadow`` and, where the env declares how to compute it,
``exact``), each group's total gain and |G0 - G1|; the algorithm reports their means
over the iteration's episodes under ``result["fairness"]["qualification_gain"]``
(:func:`summarize_qualification`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from rllib_fair.fairness import qualification as qual
from rllib_fair.fairness.blocks import Chunk, MetricBlock, MetricContext, MetricSink

#: Result block ``fairness/qualification_gain/...`` and the raw per-episode sums the env
#: runners log for it.
QUALIFICATION = "qualification_gain"
QUAL_RAW = "qualification_gain_raw"

#: ``exact_pi0(env_config, visited)`` -> ``(V_pi0 [2, n_bins], individuals per group [2])``.
ExactPi0 = Callable[[Mapping[str, Any], bool], tuple[np.ndarray, np.ndarray]]


class QualificationGainMetrics(MetricBlock):
    """Per-episode qualification-gain decomposition and group gains.

    Settings read from the config where it has them (PPO-C's), else their defaults:
    ``decomposition_average`` (``"visited"``) and ``decomposition_v_pi0``
    (``"reference"``, the V_pi0 variant whose C/DPE/IPE/SPE are the headline keys).

    Args:
        exact_pi0: the env's exact V_pi0 table, called once per process and averaging
            mode with the config's ``env_config``; None when the env has none (no
            ``exact`` variant, and ``"population"`` averaging falls back to ``"visited"``).
    """

    raw_key = QUAL_RAW

    def __init__(self, exact_pi0: ExactPi0 | None = None):
        self.exact_pi0 = exact_pi0

    def observe(self, chunk: Chunk, ctx: MetricContext, carry: Any, sink: MetricSink) -> Any:
        """Keeps the chunk's decided steps; a finished episode logs its decomposition."""
        q = qualification_steps(chunk)
        if q is None:
            return carry
        parts = (carry or []) + [(q.ids, q.groups, q.x, q.g, q.g_ps, q.g_pi0)]
        if not chunk.done:
            return parts
        ids, groups, x, g, g_ps, g_pi0 = (np.concatenate(c) for c in zip(*parts, strict=True))
        average = ctx.setting("decomposition_average", "visited")
        n_per = None
        variants: dict = {"reference": "reference", "shadow": "shadow"}
        table = self._exact_table(ctx, average)
        if table is not None:
            variants["exact"] = table[0]
            n_per = table[1]
        if average == "population" and n_per is None:
            average = "visited"
        sums: dict = {}
        for name, v_pi0 in variants.items():
            dec = qual.episode_decomposition(
                ids, groups, x, g, g_ps, v_pi0=v_pi0, g_pi0=g_pi0, average=average,
                n_per_group=n_per,
            )  # fmt: skip
            for part in ("C", "DPE", "IPE", "SPE"):
                sums[f"{name}/{part.lower()}"] = float(dec[part])
        sums["gain/0"], sums["gain/1"] = (float(v) for v in dec["G"])
        sums["gain_gap_abs"] = abs(float(dec["G_gap"]))
        sums["episodes"] = 1.0
        for raw_key, value in sums.items():
            sink.log_sum((QUAL_RAW, *raw_key.split("/")), value)
        return None

    def _exact_table(self, ctx: MetricContext, average: str):
        """``(V_pi0, n_per_group)`` from the env's ``exact_pi0`` (cached in ``ctx``) or None."""
        if self.exact_pi0 is None:
            return None
        key = (id(self), average)
        if key not in ctx.cache:
            env_config = dict(ctx.setting("env_config") or {})
            ctx.cache[key] = self.exact_pi0(env_config, average == "visited")
        return ctx.cache[key]

    def summarize(self, raw: dict, out: dict, ctx: MetricContext) -> None:
        """``out["qualification_gain"]``; headline variant: the config's ``decomposition_v_pi0``."""
        headline = ctx.setting("decomposition_v_pi0", "reference")
        out[QUALIFICATION] = summarize_qualification(raw, ctx.groups(-1), headline)


class QualificationSteps(NamedTuple):
    """The decided steps of a chunk (``individual >= 0``) and their qualification arrays.

    ``infos`` are the steps' own info dicts; ``ids`` (individual), ``groups``, ``x``
    (credit bin), ``g`` (gain under pi), ``g_ps`` (under pi^PS) and ``g_pi0`` (under
    pi0, 0 where absent) are arrays in step order.
    """

    infos: list[dict]
    ids: np.ndarray
    groups: np.ndarray
    x: np.ndarray
    g: np.ndarray
    g_ps: np.ndarray
    g_pi0: np.ndarray


def qualification_steps(chunk: Chunk) -> QualificationSteps | None:
    """The chunk's :class:`QualificationSteps` (computed once per chunk), or None.

    None when the chunk's last info carries no ``qual_gain`` (the env reports none).
    """
    return chunk.memo("qualification_steps", _qualification_steps)


def _qualification_steps(chunk: Chunk) -> QualificationSteps | None:
    infos = chunk.infos[1:]
    if not infos or "qual_gain" not in infos[-1]:
        return None
    steps = [
        i for i in infos if i.get("individual", -1) is not None and i.get("individual", -1) >= 0
    ]
    return QualificationSteps(
        steps,
        np.array([i["individual"] for i in steps], dtype=np.int64),
        np.array([i["group"] for i in steps], dtype=np.int64),
        np.array([i["credit_bin"] for i in steps], dtype=np.int64),
        np.array([i["qual_gain"] for i in steps], dtype=np.float64),
        np.array([i["qual_gain_ps"] for i in steps], dtype=np.float64),
        np.array([i.get("qual_gain_pi0", 0.0) for i in steps], dtype=np.float64),
    )


def summarize_qualification(data: dict, group_order: list[str], headline: str) -> dict:
    """``fairness/qualification_gain`` block: per-episode means of the summed raw numbers.

    Keys: ``c_pi``, ``dpe``, ``ipe``, ``spe`` (the ``headline`` V_pi0 variant),
    ``<variant>/{c_pi,dpe,ipe,spe}`` for ``reference``, ``shadow`` (and ``exact``),
    ``gain/<group>`` (each group's total realised gain G_s of an episode),
    ``gain_gap_abs`` (|G0 - G1|) and ``num_episodes``.
    """
    n = float(data.get("episodes", 0.0))
    if n <= 0:
        return {"num_episodes": 0.0}
    out: dict = {"num_episodes": n}
    for variant in ("reference", "shadow", "exact"):
        if variant not in data:
            continue
        block = {("c_pi" if k == "c" else k): float(v) / n for k, v in data[variant].items()}
        out[variant] = block
        if variant == headline:
            out.update(block)
    if "c_pi" not in out and "reference" in out:
        out.update(out["reference"])
    names = list(group_order[:2]) if len(group_order) >= 2 else ["0", "1"]
    out["gain"] = {names[g]: float(data.get("gain", {}).get(str(g), 0.0)) / n for g in (0, 1)}
    out["gain_gap_abs"] = float(data.get("gain_gap_abs", 0.0)) / n
    return out
