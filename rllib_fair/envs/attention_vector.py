"""Native vector versions of ``fair/Attention-v0`` and ``fair/AttentionHard-v0``.

:class:`AttentionVectorEnv` keeps N copies of :class:`AttentionEnv` in arrays (incident
rates ``[N, n]``, running seen / occurred totals, the observation windows ``[N, H, row]``)
and steps them with a fixed number of numpy operations, whatever N is, except for the
incident draws: the single env draws ``np_random.poisson(rates)`` once per step, so
copy ``i`` takes the same draws from its own generator (one scalar ``poisson`` call per
site, which draws exactly what the array call draws site after site, at a quarter of
its cost; the streams of N generators cannot be drawn in one call). Both action types are supported:
``"scores"`` (the softmax and largest-remainder split of
:meth:`AttentionEnv.scores_to_allocation`, done for all copies at once) and
``"allocation"`` (rows of the allocation table).

Same trajectories per copy: copy ``i`` reset with ``seed=s`` uses ``np_random(s + i)``
(``SyncVectorEnv``'s seeding), so every observation, reward, termination and info equals
what ``SyncVectorEnv`` over single copies returns, bit for bit
(``tests/envs/test_attention_vector.py``). Two details keep the score split exact: the
exponentials are computed with ``math.exp`` as the single env does (numpy's ``exp`` can
differ in the last bit), and the tie-breaking key ``round(remainder, 9)`` is computed as
an integer count of 1e-9 steps, with Python's ``round`` used for the rare values within
rounding error of a half step. Episodes end and restart like gymnasium's default
``NEXT_STEP`` autoreset; infos come as gymnasium's vector info dict.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from rllib_fair.envs.attention import (
    TIE_DECIMALS,
    AttentionEnv,
    AttentionHardEnv,
)
from rllib_fair.envs.lending_vector import NativeVectorEnv, copy_seeds
from rllib_fair.fairness.counts import (
    ALLOCATED,
    DECIDED,
    NEEDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)

_OCCURRED_ROWS = np.array([DECIDED, QUALIFIED, NEEDED])
_SEEN_ROWS = np.array([SELECTED, SELECTED_QUALIFIED, ALLOCATED])


class AttentionVectorEnv(NativeVectorEnv):
    """``num_envs`` copies of :class:`AttentionEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = AttentionEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        n_env = self._init_spaces(num_envs, spec)
        n = self._n = spec.n_sites
        self._units = spec.attention_units
        self._table = spec._table  # None for score (Box) actions
        self._init_rates = np.array(spec._init_rates, dtype=np.float64)
        self._dec = np.asarray(spec.decrease_rates, dtype=np.float64)
        self._inc = np.asarray(spec.increase_rates, dtype=np.float64)
        self._h = spec.history_len
        self._row_size = spec._row_size
        self._rngs: list[np.random.Generator | None] = [None] * n_env
        self._rates = np.zeros((n_env, n))
        self._cum_seen = np.zeros((n_env, n), dtype=np.int64)
        self._cum_occurred = np.zeros((n_env, n), dtype=np.int64)
        self._window = np.zeros((n_env, self._h, self._row_size), dtype=np.float32)
        self._t = np.zeros(n_env, dtype=np.int64)
        self._needs_reset = np.zeros(n_env, dtype=bool)
        self._started = False
        self._rows = np.arange(n_env)
        self._site_rank = np.arange(n)
        self._all_true = np.ones(n_env, dtype=bool)
        self._all_true.flags.writeable = False  # shared by every step's info masks
        self._minus = np.full(n_env, -1, dtype=np.int64)
        self._minus.flags.writeable = False
        self._zero = np.zeros(n_env, dtype=np.int64)
        self._zero.flags.writeable = False

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | list | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every copy; ``seed`` s seeds copy i with s + i (or a list per copy)."""
        for i, s in enumerate(copy_seeds(seed, self.num_envs)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
        self._reset_copies(self._rows)
        self._needs_reset[:] = False
        self._started = True
        n_env = self.num_envs
        counts = np.zeros((n_env, NUM_FIELDS, self._n))
        counts[:, POPULATION] = 1.0
        counts[:, QUALIFIED_MASS] = self._rates
        alloc = np.zeros((n_env, self._n), dtype=np.int64)
        return self._observe(), self._infos(counts, alloc)

    def step(self, actions: Any) -> tuple:
        """One step of every copy (copies whose episode ended last step reset instead)."""
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        alloc = self._allocations(actions)
        n_env, n = self.num_envs, self._n
        resetting = self._needs_reset
        everyone = not resetting.any()
        rows = self._rows if everyone else self._rows[~resetting]
        a = alloc[rows]
        rates = self._rates[rows]
        # rng.poisson(rates) draws site after site; one scalar call per site takes the
        # same draws from the stream and skips the array call's checks (4x faster)
        rngs = self._rngs
        occurred = np.array(
            [
                [draw(lam) for lam in site_rates]
                for draw, site_rates in zip(
                    [rngs[i].poisson for i in rows.tolist()], rates.tolist(), strict=True
                )
            ],
            dtype=np.int64,
        ).reshape(rows.shape[0], n)
        seen = np.minimum(a, occurred)
        lowered = rates - self._dec * a
        rates = np.where(a > 0, np.where(lowered > 0.0, lowered, 0.0), rates + self._inc)
        self._rates[rows] = rates
        self._t[rows] += 1
        n_seen = seen.sum(axis=1)
        n_missed = occurred.sum(axis=1) - n_seen
        spec = self.spec_env
        reward = spec.discovered_weight * n_seen - spec.missed_weight * n_missed
        cum_seen = self._cum_seen[rows] + seen
        cum_occ = self._cum_occurred[rows] + occurred
        self._cum_seen[rows] = cum_seen
        self._cum_occurred[rows] = cum_occ
        parts = [
            seen * spec._unit_scale,
            np.minimum(occurred, spec.count_cap) * spec._count_scale,
            a * spec._unit_scale,
        ]
        if spec.obs_ratio:
            parts.append(cum_seen / (cum_occ + 1))
        row = np.concatenate(parts, axis=1).astype(np.float32)
        window = self._window
        if everyone:
            window[:, :-1] = window[:, 1:].copy()
            window[:, -1] = row
        else:
            window[rows, :-1] = window[rows, 1:]
            window[rows, -1] = row
        counts = np.zeros((n_env, NUM_FIELDS, n))
        counts[rows[:, None], _OCCURRED_ROWS] = occurred[:, None, :]
        counts[rows[:, None], _SEEN_ROWS] = seen[:, None, :]
        terminated = np.zeros(n_env, dtype=bool)
        truncated = np.zeros(n_env, dtype=bool)
        truncated[rows] = self._t[rows] >= spec.max_steps
        if everyone:
            rewards, info_alloc = reward, alloc
        else:
            rewards = np.zeros(n_env)
            rewards[rows] = reward
            info_alloc = np.zeros((n_env, n), dtype=np.int64)
            info_alloc[rows] = a
            self._reset_copies(self._rows[resetting])
        counts[:, POPULATION] = 1.0
        counts[:, QUALIFIED_MASS] = self._rates
        self._needs_reset = terminated | truncated
        return self._observe(), rewards, terminated, truncated, self._infos(counts, info_alloc)

    # ------------------------------------------------------------------ internals

    def _observe(self) -> np.ndarray:
        return self._window.reshape(self.num_envs, -1).copy()

    def _infos(self, counts: np.ndarray, alloc: np.ndarray) -> dict[str, Any]:
        """Gymnasium's vector info dict of :class:`AttentionEnv`'s infos."""
        mask = self._all_true
        return {
            "fairness": counts,
            "_fairness": mask,
            "group": self._minus.copy(),
            "_group": mask,
            "label": self._minus.copy(),
            "_label": mask,
            "decision": self._minus.copy(),
            "_decision": mask,
            "label_observed": self._zero.copy(),
            "_label_observed": mask,
            "allocation": alloc,
            "_allocation": mask,
            "incident_rates": self._rates.copy(),
            "_incident_rates": mask,
        }

    def _reset_copies(self, rows: np.ndarray) -> None:
        self._rates[rows] = self._init_rates
        self._cum_seen[rows] = 0
        self._cum_occurred[rows] = 0
        self._window[rows] = 0.0
        self._t[rows] = 0

    def _allocations(self, actions: Any) -> np.ndarray:
        """``[N, n]`` int64 units per site of every copy's action (validated)."""
        n_env = self.num_envs
        if self._table is not None:
            a = np.asarray(actions)
            k = self._table.shape[0]
            if a.shape != (n_env,) or a.dtype.kind not in "iu":
                raise ValueError(
                    f"actions {actions!r}: expected {n_env} integers in [0, {k}) for "
                    "action_type='allocation'"
                )
            if a.min() < 0 or a.max() >= k:
                raise ValueError(f"actions {actions!r}: each action must be an integer in [0, {k})")
            return self._table[a].astype(np.int64)
        return self._scores_to_alloc(actions)

    def _scores_to_alloc(self, actions: Any) -> np.ndarray:
        """:meth:`AttentionEnv._scores_to_alloc` of every copy's scores at once."""
        n_env, n = self.num_envs, self._n
        try:
            arr = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.shape != (n_env, n):
            raise ValueError(
                f"actions {actions!r}: expected {n_env} rows of {n} finite scores "
                f"(shape ({n_env}, {n})) for action_type='scores'"
            )
        total = arr[:, 0].copy()
        for g in range(1, n):  # left to right, as the single env's sum()
            total += arr[:, g]
        if not np.isfinite(total).all():
            raise ValueError(f"actions {actions!r}: every score must be finite")
        bound = self.spec_env.score_bound
        vals = np.clip(arr, -bound, bound)
        shifted = vals - vals.max(axis=1, keepdims=True)
        weights = np.array(list(map(math.exp, shifted.ravel().tolist()))).reshape(n_env, n)
        total = weights[:, 0].copy()
        for g in range(1, n):
            total += weights[:, g]
        units = self._units
        quota = weights / total[:, None] * units
        alloc = quota.astype(np.int64)  # quota >= 0: truncation is the floor
        left = units - alloc.sum(axis=1)
        if left.any():
            alloc += self._extra_units(alloc, quota, left)
        return alloc

    def _extra_units(self, alloc, quota, left) -> np.ndarray:
        """One more unit for the ``left`` sites per copy with the largest remainders.

        The single env sorts the sites by ``round(alloc - quota, TIE_DECIMALS)`` (stable,
        ascending). The same order comes from the integer ``rint((alloc - quota) * 1e9)``,
        except where the product lies within its rounding error of a half step; those
        entries take Python's ``round`` instead.
        """
        rem = alloc - quota
        scale = 10.0**TIE_DECIMALS
        scaled = rem * scale
        key = np.rint(scaled)
        near_half = np.abs(np.abs(scaled - np.floor(scaled)) - 0.5) < 1e-6
        if near_half.any():
            for i, g in zip(*np.nonzero(near_half), strict=True):
                key[i, g] = round(round(float(rem[i, g]), TIE_DECIMALS) * scale)
        order = np.argsort(key, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, self._site_rank[None, :], axis=1)
        return (rank < left[:, None]).astype(np.int64)


class AttentionHardVectorEnv(AttentionVectorEnv):
    """``num_envs`` copies of :class:`AttentionHardEnv` (``fair/AttentionHard-v0``)."""

    SINGLE_ENV = AttentionHardEnv
