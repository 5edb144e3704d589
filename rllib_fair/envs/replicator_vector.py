"""Native vector versions of ``fair/Replicator-v0`` and ``fair/ReplicatorAdult-v0``.

:class:`ReplicatorVectorEnv` keeps N copies of :class:`ReplicatorEnv` in arrays
(qualification rates and group shares ``[N, 2]``, step counters) and steps them with a
fixed number of numpy operations, whatever N is: thresholds, true and false positive
rates, the replicator update, loss, the four disparities, the reward of every reward
mode and the observation of both observation modes. The single env computes with
Python floats; every ``+ - * /`` here is the same IEEE operation on the same operands in
the same order, and the functions whose numpy versions can differ from the C library in
the last bit (``erfc`` and powers) are computed with Python's own (``math.erfc``,
``**``), one call per value.

Randomness: copy ``i`` reset with ``seed=s`` uses ``np_random(s + i)``
(``SyncVectorEnv``'s seeding); a reset draws ``q ~ U[0.01, 0.99]^2`` with the single
env's call on that generator and, with ``population_size``, each step draws the same
binomial sample from it (one call per copy). So every observation, reward, termination
and info equals what ``SyncVectorEnv`` over single copies returns, bit for bit
(``tests/envs/test_replicator_vector.py``). ``reset`` accepts the single env's options
(``q`` / ``pr_q`` / ``q_g``, ``group_shares`` / ``pr_G``) and applies them to every copy,
as ``SyncVectorEnv`` passes the same options to each.

All copies share ``max_steps`` and no episode ends earlier, so the copies always end
together: the step after the last one resets every copy (gymnasium's ``NEXT_STEP``
autoreset: reset observations and infos, reward 0). Infos come as gymnasium's vector
info dict (``disparities`` as a nested dict with its own masks).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from rllib_fair.envs.base import as_distributions, as_probabilities
from rllib_fair.envs.lending_vector import NativeVectorEnv, copy_seeds
from rllib_fair.envs.replicator import (
    _SQRT2,
    OBS_MASS_SCALE,
    ReplicatorAdultEnv,
    ReplicatorEnv,
)


def _py_pow(base: np.ndarray, exponent: float) -> np.ndarray:
    """``base ** exponent`` per entry with Python's float power (the C library's pow)."""
    return np.array([b**exponent for b in base.tolist()], dtype=np.float64).reshape(base.shape)


def _py_erfc(x: np.ndarray) -> np.ndarray:
    """``math.erfc`` per entry."""
    return np.array(list(map(math.erfc, x.ravel().tolist())), dtype=np.float64).reshape(x.shape)


class ReplicatorVectorEnv(NativeVectorEnv):
    """``num_envs`` copies of :class:`ReplicatorEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = ReplicatorEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        n = self._init_spaces(num_envs, spec)
        if not spec._exact:
            self._suffix = np.asarray(spec._suffix, dtype=np.float64)  # [2, 2, B + 1]
            self._f = np.asarray(spec.feature_table, dtype=np.float64)  # [2, 2, B]
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._q = np.zeros((n, 2))
        self._shares = np.zeros((n, 2))
        self._t = 0
        self._needs_reset = False
        self._started = False
        self._group_col = np.array([0, 1])
        self._all_true = np.ones(n, dtype=bool)
        self._all_true.flags.writeable = False  # shared by every step's info masks

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | list | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every copy; ``seed`` s seeds copy i with s + i (or a list per copy)."""
        options = dict(options or {})
        q_value = None
        for key in ("q", "pr_q", "q_g"):
            if key in options:
                q_value = as_probabilities(f"options[{key!r}]", options.pop(key), (2,))
        shares = self.spec_env.group_shares
        for key in ("group_shares", "pr_G"):
            if key in options:
                shares = as_distributions(f"options[{key!r}]", options.pop(key), (2,))
        if options:
            raise ValueError(
                f"options={sorted(options)}: unknown keys, expected any of "
                "['q', 'pr_q', 'q_g', 'group_shares', 'pr_G']"
            )
        for i, s in enumerate(copy_seeds(seed, self.num_envs)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
        self._started = True
        return self._reset_all(q_value, shares)

    def step(self, actions: Any) -> tuple:
        """One step of every copy (or, after the last step, a reset of every copy)."""
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        a = self._thresholds(actions)
        n = self.num_envs
        if self._needs_reset:
            obs, infos = self._reset_all(None, self.spec_env.group_shares)
            done = np.zeros(n, dtype=bool)
            return obs, np.zeros(n), done, done.copy(), infos
        spec = self.spec_env
        q = self._q
        tpr, fpr = self._rates(a)
        tp = q * tpr
        tn = (1.0 - q) * (1.0 - fpr)
        ar = tp + (1.0 - q) * fpr
        (u00, u01), (u10, u11) = spec._u
        eta = spec.eta_rep
        w1 = u11 * tpr + u10 * (1.0 - tpr)
        w0 = u01 * fpr + u00 * (1.0 - fpr)
        nq = q + eta * (q * w1 / (q * w1 + (1.0 - q) * w0) - q)
        nq = np.where(nq < 0.0, 0.0, np.where(nq > 1.0, 1.0, nq))
        if spec.population_size is not None:
            size = spec.population_size
            nq = np.array([rng.binomial(size, row) / size for rng, row in zip(self._rngs, nq)])
        pi = self._shares
        pi0, pi1 = pi[:, 0], pi[:, 1]
        if spec.loss == "qr":
            loss = 1.0 - (pi0 * nq[:, 0] + pi1 * nq[:, 1])
        else:
            w_tp, w_tn = spec._w_tp, spec._w_tn
            part = w_tp * tp + w_tn * tn
            loss = 1.0 - (pi0 * part[:, 0] + pi1 * part[:, 1])
        d_dp = _py_pow(ar[:, 0] - ar[:, 1], 2)
        d_eop = _py_pow(tpr[:, 0] - tpr[:, 1], 2)
        d_eo = 0.5 * d_eop + 0.5 * _py_pow(fpr[:, 0] - fpr[:, 1], 2)
        d_qr = _py_pow(nq[:, 0] - nq[:, 1], 2)
        disparities = {"dp": d_dp, "eop": d_eop, "eo": d_eo, "qr": d_qr}
        disp = disparities[spec.disparity]
        g = 1.0 - disp
        g = np.where(g < 0.0, 0.0, g)
        r = 1.0 - loss
        t = self._t = self._t + 1
        mode = spec.reward_mode
        if mode == "reward":
            lam = 0.0
            reward = r
        elif mode == "lagrangian":
            lam = spec.lagrange_lambda
            reward = 1.0 - ((1.0 - lam) * loss + lam * disp)
        else:
            lam = spec.relaxation_lambda_final * t / spec.max_steps
            lam = 1.0 if lam > 1.0 else lam
            psi = 1.0 - _py_pow(1.0 - disp, spec.relaxation_sharpness)
            reward = 1.0 - ((1.0 - lam) * loss + lam * psi)
        counts = np.zeros((n, 8, 2))
        counts[:, 0] = pi
        counts[:, 1] = pi * q
        counts[:, 2] = pi * ar
        counts[:, 3] = pi * tp
        counts[:, 4] = pi
        counts[:, 5] = pi * nq
        mask = self._all_true
        infos = self._base_infos(counts)
        infos.update(
            {
                "q": q.copy(),
                "_q": mask,
                "q_next": nq,
                "_q_next": mask,
                "accept_rate": ar,
                "_accept_rate": mask,
                "tpr": tpr,
                "_tpr": mask,
                "fpr": fpr,
                "_fpr": mask,
                "tp": tp,
                "_tp": mask,
                "tn": tn,
                "_tn": mask,
                "loss": loss,
                "_loss": mask,
                "disparity": disp.copy(),
                "_disparity": mask,
                "disparities": {
                    "dp": d_dp,
                    "_dp": mask,
                    "eop": d_eop,
                    "_eop": mask,
                    "eo": d_eo,
                    "_eo": mask,
                    "qr": d_qr,
                    "_qr": mask,
                },
                "_disparities": mask,
                "r": r,
                "_r": mask,
                "g": g,
                "_g": mask,
                "lambda_t": np.full(n, float(lam)),
                "_lambda_t": mask,
                "t": np.full(n, t, dtype=np.int64),
                "_t": mask,
            }
        )
        self._q = nq
        end = np.full(n, t >= spec.max_steps)
        self._needs_reset = bool(end[0])
        rewards = np.asarray(reward, dtype=np.float64)
        if spec.terminate_at_horizon:
            return self._observation(), rewards, end, np.zeros(n, dtype=bool), infos
        return self._observation(), rewards, np.zeros(n, dtype=bool), end, infos

    # ------------------------------------------------------------------ internals

    def _reset_all(self, q_value, shares) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every copy (drawing its q unless given); returns observations and infos."""
        n = self.num_envs
        if q_value is None:
            self._q = np.array([rng.uniform(0.01, 0.99, size=2) for rng in self._rngs])
        else:
            self._q = np.tile(np.asarray(q_value, dtype=np.float64), (n, 1))
        self._shares = np.tile(np.asarray(shares, dtype=np.float64), (n, 1))
        self._t = 0
        self._needs_reset = False
        counts = np.zeros((n, 8, 2))
        counts[:, 4] = self._shares
        counts[:, 5] = self._shares * self._q
        infos = self._base_infos(counts)
        mask = self._all_true
        infos.update(
            {"q": self._q.copy(), "_q": mask, "t": np.zeros(n, dtype=np.int64), "_t": mask}
        )
        return self._observation(), infos

    def _base_infos(self, counts: np.ndarray) -> dict[str, Any]:
        n, mask = self.num_envs, self._all_true
        return {
            "fairness": counts,
            "_fairness": mask,
            "group": np.full(n, -1, dtype=np.int64),
            "_group": mask,
            "label": np.full(n, -1, dtype=np.int64),
            "_label": mask,
            "decision": np.full(n, -1, dtype=np.int64),
            "_decision": mask,
            "label_observed": np.zeros(n, dtype=np.int64),
            "_label_observed": mask,
        }

    def _thresholds(self, actions: Any) -> np.ndarray:
        """``[N, 2]`` thresholds clipped to ``[0, 1]``; a clear error for a bad shape or value."""
        n = self.num_envs
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is None or a.shape != (n, 2):
            raise ValueError(
                f"actions {actions!r}: expected {n} rows of 2 thresholds in [0, 1] (shape ({n}, 2))"
            )
        if not np.isfinite(a).all():
            raise ValueError(f"actions {actions!r}: expected finite thresholds in [0, 1]")
        return np.where(a < 0.0, 0.0, np.where(a > 1.0, 1.0, a))

    def _rates(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(TPR, FPR)`` ``[N, 2]`` of thresholds ``a``, as ``ReplicatorEnv._rate``."""
        spec = self.spec_env
        if spec._exact:
            tau = spec._lo + a * spec._scale
            both = _py_erfc(np.stack([(tau - 1.0) / _SQRT2, (tau + 1.0) / _SQRT2]))
            return 0.5 * both[0], 0.5 * both[1]
        n_bins = spec._n_bins
        u = a * n_bins
        m = np.minimum(u.astype(np.int64), n_bins - 1)  # u >= 0: truncation is int()
        c = m + 1 - u
        k = self._group_col
        tpr = self._suffix[k, 1, m + 1] + c * self._f[k, 1, m]
        fpr = self._suffix[k, 0, m + 1] + c * self._f[k, 0, m]
        return tpr, fpr

    def _observation(self) -> np.ndarray:
        spec = self.spec_env
        q = self._q
        if spec.observation_mode == "qualification":
            vals = q
        else:
            f = spec._obs_f
            qq = q[:, :, None]
            joint1 = qq * f[:, 1]
            px = joint1 + (1.0 - qq) * f[:, 0]
            post = np.divide(joint1, px, out=np.zeros_like(px), where=px > 0.0)
            pi = self._shares[:, :, None]
            vals = np.concatenate([pi, OBS_MASS_SCALE * px, post], axis=2)
            vals = np.clip(vals.reshape(self.num_envs, -1), 0.0, OBS_MASS_SCALE)
        if spec.include_time:
            time = np.full((self.num_envs, 1), self._t / spec.max_steps)
            vals = np.concatenate([vals, time], axis=1)
        return vals.astype(np.float32)


class ReplicatorAdultVectorEnv(ReplicatorVectorEnv):
    """``num_envs`` copies of :class:`ReplicatorAdultEnv` (``fair/ReplicatorAdult-v0``)."""

    SINGLE_ENV = ReplicatorAdultEnv
