"""A native vector version of ``fair/SchoolAdmission-v0``: N pools stepped by numpy in one call.

Each copy keeps its pool in arrays (``[N, n_applicants]`` groups, age levels, gain
indicators, logits without the age term, pass probabilities and the observation rows
``[N, n_applicants, D]``) with its resource, qualified mass and shown applicant; a step
decides on every copy's shown applicant (reward, gain indicator, ageing, new pass
probability) and shows each copy's next applicant with a fixed number of numpy
operations. The new pass probability of an aged applicant uses the single env's scalar
logistic function (``math.exp``; numpy's ``exp`` can differ in the last bit), one call per
aged copy.

Same trajectories per copy as gymnasium's ``SyncVectorEnv`` over
:class:`SchoolAdmissionEnv` (bit for bit, ``tests/envs/test_school_admission_vector.py``):
copy ``i`` reset with ``seed=s`` draws from ``np_random(s + i)``; a new pool is built by
the single env's own ``_fill_pool`` on that copy's generator (resets are rare), and the
applicants come from the same blocks of (index, label) uniforms, refilled from the same
generator, so pool draws and applicant draws interleave as in the single env. Episodes
end and restart like gymnasium's ``NEXT_STEP`` autoreset; infos are gymnasium's vector
info dict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.envs.lending_vector import CopiesVectorEnv, binary_actions
from rllib_fair.envs.school_admission import SchoolAdmissionEnv
from rllib_fair.envs.school_fit import _sigmoid1
from rllib_fair.fairness.counts import NUM_FIELDS, POPULATION, QUALIFIED_MASS

_QM = QUALIFIED_MASS - POPULATION  # the qualified-mass row of the population rows


class SchoolAdmissionVectorEnv(CopiesVectorEnv):
    """``num_envs`` copies of :class:`SchoolAdmissionEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = SchoolAdmissionEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        self._init_copies(num_envs, spec)
        n, size, g = self.num_envs, spec.n_applicants, spec.n_groups
        self._g, self._pool = g, size
        dims = spec.observation_space.shape[0]
        self._age_coef = np.asarray(spec._age_coef, dtype=np.float64)
        self._count_table = np.asarray(spec._count_table)[..., :POPULATION, :]  # [G,2,2,P,G]
        self._pool_group = np.zeros((n, size), dtype=np.int64)
        self._pool_age = np.zeros((n, size), dtype=np.int64)
        self._pool_gain = np.zeros((n, size), dtype=bool)
        self._pool_base = np.zeros((n, size))
        self._pool_alpha = np.zeros((n, size))
        self._pool_p = np.zeros((n, size))
        self._pool_obs = np.zeros((n, size, dims), dtype=np.float32)
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
        n = self.num_envs
        resetting = self._needs_reset
        r = self._rows[~resetting]
        g, y = self._group.copy(), self._label.copy()
        gs, ys, acc = g[r], y[r], a[r]
        rewards = np.zeros(n)
        self._decide(r, gs, ys, acc, rewards)
        self._t[r] += 1
        spec = self.spec_env
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        terminated[r] = self._resource[r] <= 0.0
        truncated[r] = self._t[r] >= spec.max_steps
        counts = np.empty((n, NUM_FIELDS, self._g))
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

    def _decide(self, r, gs, ys, acc, rewards) -> None:
        """SchoolAdmissionEnv._decide on the shown applicant of every copy in ``r``."""
        spec = self.spec_env
        granted = acc == 1
        if granted.any():
            rg = r[granted]
            reward = ys[granted] - spec.cost
            rewards[rg] = reward
            self._resource[rg] += reward
        idx = self._index[r]
        age = self._pool_age[r, idx]
        gained = ((acc | ys) != 0) & ~self._pool_gain[r, idx]
        aged = age < spec._top_age
        changed = gained | aged
        if not changed.any():
            return
        rc, ic, gc = r[changed], idx[changed], gs[changed]
        gained, aged, age = gained[changed], aged[changed], age[changed]
        if gained.any():
            self._pool_gain[rc[gained], ic[gained]] = True
            self._pool_obs[rc[gained], ic[gained], spec.gain_index] = 1.0
        if aged.any():
            ra, ia, old = rc[aged], ic[aged], age[aged]
            self._pool_obs[ra, ia, spec._age_offset + old] = 0.0
            self._pool_obs[ra, ia, spec._age_offset + old + 1] = 1.0
            self._pool_age[ra, ia] = old + 1
            z = self._pool_base[ra, ia] + self._age_coef[old + 1]
            self._pool_alpha[ra, ia] = list(map(_sigmoid1, z.tolist()))
        alpha = self._pool_alpha[rc, ic]
        boosted = alpha + spec.gain
        boosted = np.where(boosted > 1.0, 1.0, boosted)
        p = np.where(self._pool_gain[rc, ic], boosted, alpha)
        # PoolEnv._set_probability: qualified mass + new p - old p (one member per copy)
        qm = self._pop_rows[rc, _QM, gc] + p - self._pool_p[rc, ic]
        self._pop_rows[rc, _QM, gc] = qm
        self._pool_p[rc, ic] = p

    def _reset_copies(self, rows: np.ndarray) -> None:
        """A new pool per copy from the single env's own ``_fill_pool``, then an applicant."""
        spec = self.spec_env
        for i in rows:
            spec._fill_pool(self._rngs[i])
            self._pool_group[i] = spec._pool_group
            self._pool_age[i] = spec._pool_age
            self._pool_gain[i] = False
            self._pool_base[i] = spec._pool_base
            self._pool_alpha[i] = spec._pool_alpha
            self._pool_p[i] = spec._pool_p
            self._pool_obs[i] = spec._pool_obs
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
        self._index[rows] = idx
        self._group[rows] = self._pool_group[rows, idx]
        self._label[rows] = (u[:, 1] < self._pool_p[rows, idx]).astype(np.int64)
        self._obs[rows] = self._pool_obs[rows, idx]
