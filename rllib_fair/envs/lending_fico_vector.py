"""A native vector version of ``fair/LendingFICO-v0``: N pools stepped by numpy in one call.

Each copy keeps its pool of applicants in arrays (``[N, n_applicants]`` groups, score
bins and repay probabilities) with its resource, qualified mass and shown applicant;
a step decides on every copy's shown applicant, moves the granted ones' score bins,
and shows each copy's next applicant with a fixed number of numpy operations.

Same trajectories per copy as gymnasium's ``SyncVectorEnv`` over :class:`LendingFICOEnv`
(bit for bit, ``tests/envs/test_lending_vector.py``): copy ``i`` reset with ``seed=s``
draws from ``np_random(s + i)``; a new pool is built by :class:`LendingFICOEnv`'s own
``_fill_pool`` on that copy's generator (resets are rare, so the scalar code is reused
there), and the applicants are drawn from the same blocks of (index, repay) uniforms,
refilled from the same generator when used up, so the pool draws and the applicant
draws interleave exactly as in the single env. Episodes end and restart like
gymnasium's ``NEXT_STEP`` autoreset; infos are gymnasium's vector info dict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.envs.lending_fico import LendingFICOEnv
from rllib_fair.envs.lending_vector import CopiesVectorEnv, binary_actions
from rllib_fair.fairness.counts import NUM_FIELDS, POPULATION, QUALIFIED_MASS

_QM = QUALIFIED_MASS - POPULATION  # the qualified-mass row of the population rows


class LendingFICOVectorEnv(CopiesVectorEnv):
    """``num_envs`` copies of :class:`LendingFICOEnv` (same keyword arguments) in arrays."""

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = LendingFICOEnv(**kwargs)  # validates every argument
        self._init_copies(num_envs, spec)
        n, size, g = self.num_envs, spec.n_applicants, spec.n_groups
        self._g, self._pool = g, size
        self._obs_table = np.stack([np.stack(row) for row in spec._obs_table])  # [G, B, D]
        self._success = np.asarray(spec._success, dtype=np.float64)  # [G, B]
        self._count_table = np.asarray(spec._count_table)[..., :POPULATION, :]  # [G,2,2,P,G]
        self._pool_group = np.zeros((n, size), dtype=np.int64)
        self._pool_bin = np.zeros((n, size), dtype=np.int64)
        self._pool_p = np.zeros((n, size))
        self._pop_rows = np.zeros((n, NUM_FIELDS - POPULATION, g))
        self._resource = np.zeros(n)
        self._t = np.zeros(n, dtype=np.int64)
        self._index = np.full(n, -1, dtype=np.int64)
        self._group = np.full(n, -1, dtype=np.int64)
        self._label = np.full(n, -1, dtype=np.int64)

    # ------------------------------------------------------------------ gymnasium API

    def step(self, actions: Any) -> tuple:
        """One step of every copy (copies whose episode ended last step reset instead)."""
        self._check_started()
        a = binary_actions(actions, self.num_envs)
        spec = self.spec_env
        n = self.num_envs
        resetting = self._needs_reset
        stepping = self._rows[~resetting]
        g, y = self._group.copy(), self._label.copy()
        rewards = np.zeros(n)
        counts = np.empty((n, NUM_FIELDS, self._g))
        # LendingFICOEnv._decide on every stepping copy: a grant pays y - cost and moves
        # the member's bin one up on repayment, one down on default (clipped).
        r, gs, ys, acc = stepping, g[stepping], y[stepping], a[stepping]
        granted = acc == 1
        if granted.any():
            rg, gg, yg = r[granted], gs[granted], ys[granted]
            reward = yg - spec.cost
            rewards[rg] = reward
            self._resource[rg] += reward
            idx = self._index[rg]
            b = self._pool_bin[rg, idx]
            dst = np.where(yg == 1, np.minimum(b + 1, spec.n_bins - 1), np.maximum(b - 1, 0))
            moving = dst != b
            if moving.any():
                rm, im, gm, dm = rg[moving], idx[moving], gg[moving], dst[moving]
                self._pool_bin[rm, im] = dm
                p_new = self._success[gm, dm]
                # PoolEnv._set_probability: qualified mass + new p - old p (one member
                # per copy, so the rows are distinct)
                qm = self._pop_rows[rm, _QM, gm] + p_new - self._pool_p[rm, im]
                self._pop_rows[rm, _QM, gm] = qm
                self._pool_p[rm, im] = p_new
        self._t[r] += 1
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        terminated[r] = self._resource[r] <= 0.0
        truncated[r] = self._t[r] >= spec.max_steps
        if spec.time_limit_terminates:
            terminated |= truncated
            truncated[:] = False
        counts[r, :POPULATION] = self._count_table[gs, ys, acc]
        counts[r, POPULATION:] = self._pop_rows[r]
        decision = np.where(resetting, -1, a)
        if resetting.any():
            back = self._rows[resetting]
            self._reset_copies(back)
            counts[back] = 0.0
            counts[back, POPULATION:] = self._pop_rows[back]
            g[back] = -1
            y[back] = -1
        self._draw(r)
        self._needs_reset = terminated | truncated
        return self._obs.copy(), rewards, terminated, truncated, self._infos(counts, g, y, decision)

    # ------------------------------------------------------------------ internals

    def _reset_copies(self, rows: np.ndarray) -> None:
        """A new pool per copy from LendingFICOEnv's own ``_fill_pool``, then an applicant."""
        spec = self.spec_env
        for i in rows:
            spec._fill_pool(self._rngs[i])
            self._pool_group[i] = spec._pool_group
            self._pool_bin[i] = spec._pool_bin
            self._pool_p[i] = spec._pool_p
            self._pop_rows[i] = spec._pop_rows
            self._resource[i] = spec._resource
            self._t[i] = 0
        self._draw(rows)

    def _draw(self, rows: np.ndarray) -> None:
        """PoolEnv._draw_applicant for the copies in ``rows`` (one uniform row each)."""
        if len(rows) == 0:
            return
        u = self._uniforms(rows)
        # int(u * n) truncates toward zero (u >= 0); u * n can round up to n
        idx = np.minimum((u[:, 0] * self._pool).astype(np.int64), self._pool - 1)
        group = self._pool_group[rows, idx]
        self._index[rows] = idx
        self._group[rows] = group
        self._label[rows] = (u[:, 1] < self._pool_p[rows, idx]).astype(np.int64)
        self._obs[rows] = self._obs_table[group, self._pool_bin[rows, idx]]
