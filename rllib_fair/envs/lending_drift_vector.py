"""A native vector version of ``fair/LendingDrift-v0``: N drifting populations in arrays.

:class:`LendingDriftVectorEnv` keeps N copies of :class:`LendingDriftEnv` in arrays (every
individual's credit bin and its drift-only shadow bin ``[N, 2 * individuals]``, per-group
qualification sums, cash, the history of decided applicants as a ring buffer
``[N, history_window]`` with its counts per (group, bin)) and steps them with a fixed
number of numpy operations, whatever N is: the decision (reward, outcome and drift move,
clipping, qualification mass), the shadow move, the history window and the
qualification-gain infos, then the next applicant of every copy.

Same trajectories per copy: copy ``i`` reset with ``seed=s`` uses ``np_random(s + i)``
(``SyncVectorEnv``'s seeding) and draws its applicants from the same blocks of
(group, individual, repay, drift) uniforms as the single env, refilled from the same
generator, so every observation, reward, termination and info equals what
``SyncVectorEnv`` over single copies returns, bit for bit
(``tests/envs/test_lending_drift_vector.py``). Episodes end and restart like gymnasium's
``NEXT_STEP`` autoreset; infos are gymnasium's vector info dict with the env's
qualification keys.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.envs.lending_drift import QUALIFICATION_INFO_KEYS, LendingDriftEnv
from rllib_fair.envs.lending_vector import CopiesVectorEnv, binary_actions
from rllib_fair.fairness.counts import NUM_FIELDS, POPULATION

_INT_KEYS = ("individual", "credit_bin", "next_credit_bin", "initial_credit_bin")


class LendingDriftVectorEnv(CopiesVectorEnv):
    """``num_envs`` copies of :class:`LendingDriftEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = LendingDriftEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        self._init_copies(num_envs, spec)
        n, g, b = self.num_envs, spec.n_groups, spec.n_bins
        self._g, self._b = g, b
        self._ind = spec.individuals_per_group
        self._window = spec.history_window
        self._success = np.asarray(spec._success, dtype=np.float64)  # [G, B]
        self._gain = np.asarray(spec._gain, dtype=np.float64)  # [B, B]
        self._benefit = np.asarray(spec._benefit, dtype=np.float64)  # [G, B]
        self._group_cum0 = spec._group_cum[0]
        self._drift_cum = np.asarray(spec._drift_cum, dtype=np.float64)  # [G, 3]
        self._qm_scale = np.asarray(spec._qm_scale, dtype=np.float64)
        self._initial_bins = np.asarray(spec._initial_bins, dtype=np.int64)
        static = spec._static_size
        self._static = static
        table = np.zeros((g, b, max(static, 1)), dtype=np.float32)
        for gg in range(g):
            for bb in range(b):
                table[gg, bb, :static] = spec._obs_table[gg][bb]
        self._obs_table = table[..., :static]
        self._count_table = np.asarray(spec._count_table)[..., :POPULATION, :]  # [G,2,2,P,G]
        size = g * self._ind
        self._bins = np.zeros((n, size), dtype=np.int64)
        self._x_pi0 = np.zeros((n, size), dtype=np.int64)
        self._qsum = np.zeros((n, g))
        self._pop_rows = np.zeros((n, NUM_FIELDS - POPULATION, g))
        self._hist = np.zeros((n, g * b))
        self._ring = np.zeros((n, self._window), dtype=np.int64)
        self._head = np.zeros(n, dtype=np.int64)
        self._length = np.zeros(n, dtype=np.int64)
        self._cash = np.zeros(n)
        self._t = np.zeros(n, dtype=np.int64)
        self._index = np.full(n, -1, dtype=np.int64)
        self._group = np.full(n, -1, dtype=np.int64)
        self._label = np.full(n, -1, dtype=np.int64)
        self._drift = np.zeros(n, dtype=np.int64)
        self._extra: dict[str, np.ndarray] = {
            key: np.zeros(n, dtype=np.int64 if key in (*_INT_KEYS, "credit_drift") else np.float64)
            for key in QUALIFICATION_INFO_KEYS
        }

    # ------------------------------------------------------------------ gymnasium API

    def step(self, actions: Any) -> tuple:
        """One step of every copy (copies whose episode ended last step reset instead)."""
        self._check_started()
        a = binary_actions(actions, self.num_envs)
        spec = self.spec_env
        n = self.num_envs
        resetting = self._needs_reset
        r = self._rows[~resetting]
        g, y = self._group.copy(), self._label.copy()
        gs, ys, acc = g[r], y[r], a[r]
        rewards = np.zeros(n)
        self._decide(r, gs, ys, acc, rewards)
        self._t[r] += 1
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        terminated[r] = self._cash[r] < spec.loan_amount
        truncated[r] = self._t[r] >= spec.max_steps
        if spec.time_limit_terminates:
            terminated |= truncated
            truncated[:] = False
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

    def _infos(self, counts, group, label, decision) -> dict[str, Any]:
        """The common vector infos plus the qualification keys of every copy."""
        infos = super()._infos(counts, group, label, decision)
        mask = self._all_true
        for key, values in self._extra.items():
            infos[key] = values.copy()
            infos[f"_{key}"] = mask
        return infos

    def _decide(self, r, gs, ys, acc, rewards) -> None:
        """LendingDriftEnv._decide on the shown applicant of every copy in ``r``."""
        spec = self.spec_env
        top = self._b - 1
        i = self._index[r]
        k = self._drift[r]
        x = self._bins[r, i]
        granted = acc == 1
        repaid = ys == 1
        reward = np.where(
            granted,
            np.where(repaid, spec.loan_amount * spec.interest_rate, -spec.loan_amount),
            0.0,
        )
        if granted.any():
            rg = r[granted]
            rewards[rg] = reward[granted]
            self._cash[rg] += reward[granted]
        step = np.where(granted, np.where(repaid, 1, -1), 0)
        nx = np.clip(x + k + step, 0, top)  # clip after drift and outcome
        xd = np.clip(x + k, 0, top)  # the bin had the applicant been rejected
        moved = nx != x
        if moved.any():
            rm, im, gm, xm, nm = r[moved], i[moved], gs[moved], x[moved], nx[moved]
            self._bins[rm, im] = nm
            qs = self._qsum[rm, gm] + self._success[gm, nm] - self._success[gm, xm]
            self._qsum[rm, gm] = qs
            self._pop_rows[rm, 1, gm] = qs * self._qm_scale[gm]
        x0 = self._x_pi0[r, i]
        x0n = np.clip(x0 + k, 0, top)
        self._x_pi0[r, i] = x0n
        # the history of decided applicants: a FIFO of at most history_window codes
        code = gs * self._b + x
        self._hist[r, code] += 1.0
        full = self._length[r] >= self._window
        if full.any():
            rf = r[full]
            head = self._head[rf]
            self._hist[rf, self._ring[rf, head]] -= 1.0
            self._ring[rf, head] = code[full]
            self._head[rf] = (head + 1) % self._window
        if not full.all():
            rn = r[~full]
            self._ring[rn, (self._head[rn] + self._length[rn]) % self._window] = code[~full]
            self._length[rn] += 1
        extra = self._extra
        extra["individual"][r] = i
        extra["credit_bin"][r] = x
        extra["next_credit_bin"][r] = nx
        extra["initial_credit_bin"][r] = self._initial_bins[i]
        extra["credit_drift"][r] = k
        extra["qual_gain"][r] = self._gain[x, nx]
        extra["qual_gain_ps"][r] = self._gain[x, xd]
        extra["qual_gain_pi0"][r] = self._gain[x0, x0n]
        extra["benefit"][r] = self._benefit[gs, x]

    def _reset_copies(self, rows: np.ndarray) -> None:
        """LendingDriftEnv._fill_pool (no draws) for the copies in ``rows``, then applicants."""
        spec = self.spec_env
        spec._fill_pool(None)  # deterministic: the same initial state for every copy
        self._bins[rows] = self._initial_bins
        self._x_pi0[rows] = self._initial_bins
        self._qsum[rows] = spec._qsum
        self._pop_rows[rows] = spec._pop_rows
        self._hist[rows] = 0.0
        self._head[rows] = 0
        self._length[rows] = 0
        self._cash[rows] = spec.starting_cash
        self._t[rows] = 0
        for key, values in self._extra.items():
            values[rows] = spec._extra[key]
        self._draw(rows)

    def _draw(self, rows: np.ndarray) -> None:
        """LendingDriftEnv._draw_applicant for the copies in ``rows`` (one uniform row each)."""
        if len(rows) == 0:
            return
        u = self._uniforms(rows)
        n = self._ind
        g = (u[:, 0] >= self._group_cum0).astype(np.int64)
        # int(u * n) truncates toward zero (u >= 0); u * n can round up to n
        j = np.minimum((u[:, 1] * n).astype(np.int64), n - 1)
        i = g * n + j
        b = self._bins[rows, i]
        self._index[rows] = i
        self._group[rows] = g
        self._label[rows] = (u[:, 2] < self._success[g, b]).astype(np.int64)
        dc = self._drift_cum[g]
        self._drift[rows] = np.where(u[:, 3] < dc[:, 0], -1, np.where(u[:, 3] < dc[:, 1], 0, 1))
        s = self._static
        self._obs[rows, :s] = self._obs_table[g, b]
        if self.spec_env.obs_history:
            scale = 1.0 / (self._length[rows] + 1)
            self._obs[rows, s:] = self._hist[rows] * scale[:, None]
