"""A base for pool-of-individuals environments: who is shown, who is decided on, what changed.

Several environments of the package share one shape: a fixed pool
of individuals, each with a group and a state; every step one individual is *shown* (its
observation), the agent accepts or rejects it, the individual's state changes and the
next individual is shown. :class:`PoolEnv` holds that bookkeeping once:

* ``reset()``: seeds, rebuilds the pool (:meth:`PoolEnv._fill_pool`, the subclass's
  dynamics), shows the first individual and returns the reset info (zero decision
  counts, ``group = label = decision = -1``).
* ``step(action)``: validates the accept/reject action (and refuses a step before
  ``reset()`` or after the episode ended), applies :meth:`PoolEnv._decide` (the
  subclass's dynamics: reward, state change, termination), counts the step, builds the
  counts record ``info["fairness"]`` (decision rows of the individual decided on,
  population rows after the step), truncates after ``max_steps`` and shows the next
  individual.
* Per-individual state the base knows about: ``_pool_group`` (group of each member),
  ``_pool_p`` (its current label probability, used to draw the label when it is shown)
  and ``_pool_obs`` (its observation row); the population rows ``_pop_rows`` (members
  and qualified mass per group), updated in O(1) by :meth:`PoolEnv._set_probability`.
* Who is shown: by default a uniformly random pool member (:meth:`PoolEnv._draw_applicant`,
  two uniforms per step: the index, then the label); a subclass with another selection
  rule overrides it.

Subclasses state only their dynamics: they set ``max_steps``, ``_n_groups`` and the
spaces in ``__init__`` (after :meth:`PoolEnv._init_pool`), and implement
:meth:`PoolEnv._fill_pool` and :meth:`PoolEnv._decide`. ``fair/LendingFICO-v0``,
``fair/SchoolAdmission-v0`` and ``fair/LendingDrift-v0`` are built on it.

Nothing here imports ray or torch.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rllib_fair.envs.base import FairEnvMixin
from rllib_fair.fairness.counts import NUM_FIELDS, POPULATION, decision_counts, empty_counts


class PoolEnv(FairEnvMixin, gym.Env):
    """Reset/step bookkeeping of an environment that decides on one pool member per step.

    Subclass contract:

    * ``__init__``: call :meth:`_init_pool` with the number of groups and the pool size, set
      ``self.max_steps`` and the spaces.
    * :meth:`_fill_pool` ``(rng)``: build the pool for a new episode: ``_pool_group``,
      ``_pool_p``, ``_pool_obs`` (indexable by member), the population rows (e.g. with
      :meth:`_reset_population`) and any episode state of the subclass (resource...).
    * :meth:`_decide` ``(a) -> (reward, terminated)``: apply the decision ``a`` on the
      shown member (``_index``, ``_group``, ``_label``); update its state (and, through
      :meth:`_set_probability`, the population rows).

    State readable by subclasses: ``_t`` (steps since reset), ``_index`` / ``_group`` /
    ``_label`` (the member shown in the latest observation, its group and its label).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    max_steps: int
    #: Report the step limit as a termination (no bootstrap) instead of a truncation.
    time_limit_terminates: bool = False

    def _init_pool(self, n_groups: int, pool_size: int) -> None:
        """Initialises the bookkeeping (call once from the subclass's ``__init__``)."""
        self._n_groups = n_groups
        self._pool_size = pool_size
        self._pool_group: list[int] = []
        self._pool_p: list[float] = []
        self._pool_obs: Any = []
        self._pop_rows = np.zeros((NUM_FIELDS - POPULATION, n_groups), dtype=np.float64)
        self._qualified_mass = [0.0] * n_groups
        # decision_counts(g, y, a) for every (group, label, decision), copied per step
        # (cheaper than filling a fresh array; the values are the same).
        self._count_table = [
            [[decision_counts(g, y, a, n_groups) for a in (0, 1)] for y in (0, 1)]
            for g in range(n_groups)
        ]
        self._t = 0
        self._index = -1
        self._group = -1
        self._label = -1
        self._u_buf = []
        self._u_pos = 0

    # ------------------------------------------------------------------ public state

    @property
    def pool_groups(self) -> np.ndarray:
        """Group of every pool member (a copy)."""
        return np.array(self._pool_group, dtype=np.int64)

    @property
    def elapsed_steps(self) -> int:
        """Steps taken since the last reset."""
        return self._t

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Builds a fresh pool (the subclass's :meth:`_fill_pool`), shows the first member."""
        super().reset(seed=seed)
        self._reset_uniforms(seed)
        self._fill_pool(self.np_random)
        self._t = 0
        obs = self._draw_applicant()
        counts = empty_counts(self._n_groups)
        counts[POPULATION:] = self._pop_rows
        return obs, self._decision_info(counts, -1, -1, -1)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Decides on the shown member (:meth:`_decide`), counts it, shows the next one."""
        a = self._accept_reject(action)
        g = self._group
        y = self._label
        reward, terminated = self._decide(a)
        self._t += 1
        counts = self._count_table[g][y][a].copy()
        counts[POPULATION:] = self._pop_rows
        info = self._decision_info(counts, g, y, a)
        truncated = self._t >= self.max_steps
        if truncated and self.time_limit_terminates:
            terminated, truncated = True, False
        self._episode_over = terminated or truncated
        return self._draw_applicant(), reward, terminated, truncated, info

    # ------------------------------------------------------------------ subclass hooks

    def _fill_pool(self, rng: np.random.Generator) -> None:
        """Builds the pool and the episode state of a new episode (subclass dynamics)."""
        raise NotImplementedError

    def _decide(self, a: int) -> tuple[float, bool]:
        """Applies decision ``a`` on the shown member; returns ``(reward, terminated)``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    def _reset_population(self, groups: np.ndarray, p: np.ndarray) -> None:
        """Population rows from every member's group and label probability (at reset).

        ``population[g]`` = number of members of group ``g``; ``qualified_mass[g]`` = sum of
        their label probabilities.
        """
        n_groups = self._n_groups
        self._pop_rows[0] = np.bincount(groups, minlength=n_groups)
        self._qualified_mass = [float(p[groups == g].sum()) for g in range(n_groups)]
        self._pop_rows[1] = self._qualified_mass

    def _set_probability(self, i: int, g: int, p: float) -> None:
        """Sets member ``i``'s (of group ``g``) label probability; updates qualified mass."""
        qm = self._qualified_mass[g] = self._qualified_mass[g] + p - self._pool_p[i]
        self._pool_p[i] = p
        self._pop_rows[1, g] = qm

    def _draw_applicant(self) -> np.ndarray:
        """Shows a uniformly random member and draws its label; returns its observation."""
        u_index, u_label = self._uniform_row()
        n = self._pool_size
        i = int(u_index * n)
        if i >= n:  # u * n can round up to n for u just below 1
            i = n - 1
        self._index = i
        self._group = self._pool_group[i]
        self._label = 1 if u_label < self._pool_p[i] else 0
        return self._pool_obs[i].copy()
