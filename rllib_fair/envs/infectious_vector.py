"""Native vector versions of ``fair/Infectious-v0`` and ``fair/InfectiousHard-v0``.

:class:`InfectiousVectorEnv` keeps N copies of :class:`InfectiousEnv` in arrays (health
states ``[N, 34]``, one-hot observations) and steps them with a fixed number of numpy
operations, whatever N is: vaccination, then infections (infected neighbours of every
node of every copy in one matrix product with the karate club's adjacency), recoveries
and relapses.

Same trajectories per copy: copy ``i`` reset with ``seed=s`` uses ``np_random(s + i)``
(``SyncVectorEnv``'s seeding) and takes its uniforms in the same blocks as the single
env (``_UNIFORM_BLOCK`` rows of one uniform per node; the initially infected node comes
from the first entry of a row), refilled from the same generator when used up, so every
observation, reward, termination and info equals what ``SyncVectorEnv`` over single
copies returns, bit for bit (``tests/envs/test_infectious_vector.py``). ``reset``
accepts the single env's ``options={"health_states": ...}`` and applies them to every
copy, as ``SyncVectorEnv`` passes the same options to each. Episodes end and restart
like gymnasium's default ``NEXT_STEP`` autoreset; infos come as gymnasium's vector info
dict (``newly_infected`` as an object array of ``(group 0, group 1)`` tuples, as
``SyncVectorEnv`` gives it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding

from rllib_fair.envs.infectious import (
    INFECTED,
    N_NODES,
    N_STATES,
    RECOVERED,
    SUSCEPTIBLE,
    InfectiousEnv,
    InfectiousHardEnv,
)
from rllib_fair.envs.lending_vector import NativeVectorEnv, copy_seeds
from rllib_fair.fairness.counts import ALLOCATED, NEEDED, QUALIFIED_MASS


class InfectiousVectorEnv(NativeVectorEnv):
    """``num_envs`` copies of :class:`InfectiousEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = InfectiousEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        n = self._init_spaces(num_envs, spec)
        self._adj_t = np.ascontiguousarray(spec._adj.T)  # infected @ adj.T = adj @ infected
        self._node_group = np.asarray(spec._node_group, dtype=np.int64)
        self._in_group0 = np.asarray(spec._in_group0)
        self._p_infect = spec._p_infect
        self._sizes = np.asarray(spec._group_sizes, dtype=np.float64)
        self._counts0 = spec._counts0
        self._eye = spec._eye
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._u_buf = np.zeros((n, spec._UNIFORM_BLOCK, N_NODES))
        self._u_pos = np.full(n, spec._UNIFORM_BLOCK, dtype=np.int64)
        self._state = np.zeros((n, N_NODES), dtype=np.int8)
        self._t = np.zeros(n, dtype=np.int64)
        self._needs_reset = np.zeros(n, dtype=bool)
        self._started = False
        self._rows = np.arange(n)
        self._all_true = np.ones(n, dtype=bool)
        self._all_true.flags.writeable = False  # shared by every step's info masks

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | list | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every copy; ``seed`` s seeds copy i with s + i (or a list per copy)."""
        states = None
        if options:
            unknown = sorted(set(options) - {"health_states"})
            if unknown:
                raise ValueError(f"options: unknown key(s) {unknown}, expected 'health_states'")
            states = self.spec_env._check_health_states(options["health_states"])
        for i, s in enumerate(copy_seeds(seed, self.num_envs)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
                self._u_pos[i] = self._u_buf.shape[1]  # drop buffered draws
        self._reset_copies(self._rows, states)
        self._needs_reset[:] = False
        self._started = True
        n = self.num_envs
        counts = np.broadcast_to(self._counts0, (n, *self._counts0.shape)).copy()
        num_infected = self._fill_qualified_mass(counts)
        minus = np.full(n, -1, dtype=np.int64)
        newly = self._tuples(np.zeros((n, 2), dtype=np.int64))
        return self._observe(), self._infos(counts, minus, minus.copy(), newly, num_infected)

    def step(self, actions: Any) -> tuple:
        """One step of every copy (copies whose episode ended last step reset instead)."""
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        n = self.num_envs
        a = np.asarray(actions)
        if (
            a.shape != (n,)
            or a.dtype.kind not in "iu"
            or (n and (a.min() < 0 or a.max() > N_NODES))
        ):
            raise ValueError(
                f"actions {actions!r}: expected {n} integers, each a node index in "
                f"[0, {N_NODES - 1}] or {N_NODES} (no vaccination)"
            )
        a = a.astype(np.int64)
        resetting = self._needs_reset
        everyone = not resetting.any()
        rows = self._rows if everyone else self._rows[~resetting]
        counts = np.broadcast_to(self._counts0, (n, *self._counts0.shape)).copy()
        ar = a[rows]
        vacc = ar != N_NODES
        rv, nodes = rows[vacc], ar[vacc]
        groups = self._node_group[nodes]
        counts[rv, ALLOCATED, groups] = 1.0
        st = self._state
        sus = st[rv, nodes] == SUSCEPTIBLE
        st[rv[sus], nodes[sus]] = RECOVERED
        group = np.full(n, -1, dtype=np.int64)
        decision = np.full(n, -1, dtype=np.int64)
        group[rv], decision[rv] = groups, nodes
        new_inf = self._progress(rows)
        n_new = np.count_nonzero(new_inf, axis=1)
        n_new0 = np.count_nonzero(new_inf & self._in_group0, axis=1)
        newly = np.zeros((n, 2), dtype=np.int64)
        newly[rows, 0] = n_new0
        newly[rows, 1] = n_new - n_new0
        counts[rows, NEEDED] = newly[rows]
        self._t[rows] += 1
        over = np.zeros(n, dtype=bool)
        over[rows] = self._t[rows] >= self.spec_env.max_steps
        terminated = over if self.spec_env.horizon_terminal else np.zeros(n, dtype=bool)
        truncated = over & ~terminated
        if not everyone:
            self._reset_copies(self._rows[resetting], None)
        num_infected = self._fill_qualified_mass(counts)
        rewards = (N_NODES - num_infected) / N_NODES
        if not everyone:
            rewards[resetting] = 0.0
        self._needs_reset = over.copy()
        infos = self._infos(counts, group, decision, self._tuples(newly), num_infected)
        return self._observe(), rewards, terminated, truncated, infos

    # ------------------------------------------------------------------ internals

    def _observe(self) -> np.ndarray:
        return self._eye[self._state].reshape(self.num_envs, N_NODES * N_STATES)

    def _infos(self, counts, group, decision, newly, num_infected) -> dict[str, Any]:
        """Gymnasium's vector info dict of :class:`InfectiousEnv`'s infos."""
        mask = self._all_true
        n = self.num_envs
        return {
            "fairness": counts,
            "_fairness": mask,
            "group": group,
            "_group": mask,
            "label": np.full(n, -1, dtype=np.int64),
            "_label": mask,
            "decision": decision,
            "_decision": mask,
            "label_observed": np.zeros(n, dtype=np.int64),
            "_label_observed": mask,
            "newly_infected": newly,
            "_newly_infected": mask,
            "num_infected": num_infected,
            "_num_infected": mask,
        }

    @staticmethod
    def _tuples(pairs: np.ndarray) -> np.ndarray:
        """An object array of ``(int, int)`` tuples, one per row of ``pairs``."""
        out = np.empty(pairs.shape[0], dtype=object)
        out[:] = [tuple(p) for p in pairs.tolist()]
        return out

    def _fill_qualified_mass(self, counts: np.ndarray) -> np.ndarray:
        """Not-infected members per group into ``counts``; returns #infected per copy."""
        infected = self._state == INFECTED
        n_inf = np.count_nonzero(infected, axis=1)
        n_inf0 = np.count_nonzero(infected & self._in_group0, axis=1)
        counts[:, QUALIFIED_MASS, 0] = self._sizes[0] - n_inf0
        counts[:, QUALIFIED_MASS, 1] = self._sizes[1] - (n_inf - n_inf0)
        return n_inf

    def _reset_copies(self, rows: np.ndarray, states: np.ndarray | None) -> None:
        spec = self.spec_env
        st = self._state
        if states is not None:
            st[rows] = states
        else:
            st[rows] = SUSCEPTIBLE
            if spec.initial_infected is None:
                u = self._uniforms(rows)[:, 0]
                nodes = np.minimum((u * N_NODES).astype(np.int64), N_NODES - 1)
            else:
                nodes = np.full(rows.shape[0], spec.initial_infected, dtype=np.int64)
            st[rows, nodes] = INFECTED
        for _ in range(spec.burn_in):
            self._progress(rows)
        self._t[rows] = 0

    def _uniforms(self, rows: np.ndarray) -> np.ndarray:
        """The next row of ``N_NODES`` uniforms of each copy in ``rows`` (``[k, 34]``)."""
        pos = self._u_pos
        block = self._u_buf.shape[1]
        for i in rows[pos[rows] >= block].tolist():
            self._u_buf[i] = self._rngs[i].random((block, N_NODES))
            pos[i] = 0
        u = self._u_buf[rows, pos[rows]]
        pos[rows] += 1
        return u

    def _progress(self, rows: np.ndarray) -> np.ndarray:
        """One disease step of the copies in ``rows``; returns their newly infected masks."""
        spec = self.spec_env
        u = self._uniforms(rows)
        st = self._state[rows]
        infected = st == INFECTED
        neighbours = infected.astype(np.int64) @ self._adj_t
        new_inf = (st == SUSCEPTIBLE) & (u < self._p_infect[neighbours])
        recovered = infected & (u < spec.recovery_prob)
        if spec.relapse_prob > 0.0:
            st[(st == RECOVERED) & (u < spec.relapse_prob)] = SUSCEPTIBLE
        st[new_inf] = INFECTED
        st[recovered] = RECOVERED
        self._state[rows] = st
        return new_inf


class InfectiousHardVectorEnv(InfectiousVectorEnv):
    """``num_envs`` copies of :class:`InfectiousHardEnv` (``fair/InfectiousHard-v0``)."""

    SINGLE_ENV = InfectiousHardEnv
