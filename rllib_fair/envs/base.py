"""Shared pieces of the rllib-fair environments.

* :class:`FairEnvMixin`: the class attributes every environment declares
  (``GROUP_NAMES``, ``SUPPORTED_NOTIONS``, ``DEFAULT_NOTION``, ``DESCRIPTION``), read by
  :func:`rllib_fair.envs.env_info` without constructing the environment, plus a fast,
  seeded source of uniform draws.
* Validation helpers that raise one-line :class:`ValueError` messages naming the
  argument, the bad value and what would be valid. Real-valued arguments are bounded
  by :data:`MAX_MAGNITUDE`, so no finite argument can make a reward inf or NaN.
* Step guards shared by every environment: discrete actions must be integers
  (:func:`as_discrete_action`: floats, strings and bools are rejected, not truncated),
  and ``step()`` after the episode ended (a step returned ``terminated`` or
  ``truncated``) raises :class:`RuntimeError` until ``reset()``.

Nothing here imports ray or torch.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from rllib_fair.fairness.blocks import LabelHiding, MetricBlock, NotionMetrics

#: Fairness notions (short names of :mod:`rllib_fair.fairness.notions`) that a
#: classification-style environment (one individual decided per step, true labels known
#: to the simulator) can report.
CLASSIFICATION_NOTIONS: tuple[str, ...] = (
    "equal_opportunity",
    "demographic_parity",
    "equalized_odds",
    "accuracy_parity",
    "qualification_parity",
)

#: Tolerance on "probabilities sum to 1".
PROB_SUM_ATOL = 1e-6

#: Largest magnitude accepted for a real-valued parameter (amounts, costs, weights,
#: rates). Rewards and balances are sums of products of a few such parameters over the
#: steps of an episode; with every factor at most 1e15 they stay far from float64's
#: overflow (about 1.8e308), so a huge finite argument cannot turn a reward into inf or
#: NaN.
MAX_MAGNITUDE = 1e15


class FairEnvMixin:
    """Group metadata and block-buffered uniform draws for a ``gymnasium.Env``.

    Mix in before :class:`gymnasium.Env` (``class MyEnv(FairEnvMixin, gymnasium.Env)``).

    Class attributes (read without constructing the environment):

    * ``GROUP_NAMES``: one name per group; column ``g`` of ``info["fairness"]`` is
      ``GROUP_NAMES[g]``.
    * ``SUPPORTED_NOTIONS``: fairness notions the environment's counts support.
    * ``DEFAULT_NOTION``: the notion the reference papers used on this environment.
    * ``DESCRIPTION``: a one-line description for CLI listings.
    * ``METRIC_BLOCKS``: the blocks of metrics the environment reports
      (:mod:`rllib_fair.fairness.blocks`); by default the notions' supply, demand,
      long-term rates and gaps from the counts in ``info["fairness"]``.
    * ``LABEL_HIDING``: how its step infos lose the labels the decision-maker did not
      observe, unless the config's label access is ``"oracle"``; by default one decision
      per step (``info["label_observed"]``).

    Uniform draws: :meth:`_uniform_row` returns a list of ``_UNIFORM_WIDTH`` floats in
    ``[0, 1)``, taken from a block of ``_UNIFORM_BLOCK`` rows drawn at once from
    ``self.np_random``. Call :meth:`_reset_uniforms` from ``reset()`` after
    ``super().reset(seed=seed)``: the buffer is dropped when a seed is given (or the
    generator was replaced), so a seeded reset always replays the same draws.
    """

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ()
    SUPPORTED_NOTIONS: ClassVar[tuple[str, ...]] = CLASSIFICATION_NOTIONS
    DEFAULT_NOTION: ClassVar[str] = "equal_opportunity"
    DESCRIPTION: ClassVar[str] = ""
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (NotionMetrics(),)
    LABEL_HIDING: ClassVar[LabelHiding] = LabelHiding()

    _UNIFORM_BLOCK: ClassVar[int] = 1024
    _UNIFORM_WIDTH: ClassVar[int] = 1

    _u_buf: list[list[float]]
    _u_pos: int
    _u_rng: Any

    #: True once a step returned ``terminated`` or ``truncated``; ``reset()`` clears it.
    _episode_over: bool = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Clears the episode-over flag, then seeds like ``gymnasium.Env.reset``."""
        self._episode_over = False
        super().reset(seed=seed, options=options)  # type: ignore[misc]

    def _check_episode_running(self) -> None:
        """Raises if the last step ended the episode and ``reset()`` was not called since.

        Raises:
            RuntimeError: naming the environment and what to do.
        """
        if self._episode_over:
            raise RuntimeError(
                f"{type(self).__name__}.step() called after the episode ended (a step "
                "returned terminated or truncated); call reset() before stepping again"
            )

    def _accept_reject(self, action: Any) -> int:
        """Validates an accept/reject action of a one-individual-per-step env.

        Returns:
            0 (reject) or 1 (accept).

        Raises:
            RuntimeError: if called before ``reset()`` (no individual shown yet) or after
                the episode ended.
            ValueError: for any other action (see :func:`as_discrete_action`).
        """
        if self._group < 0:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        self._check_episode_running()
        return as_discrete_action(action, 2, "0 (reject) or 1 (accept)")

    @staticmethod
    def _decision_info(counts: np.ndarray, group: int, label: int, decision: int) -> dict:
        """The step info of a one-individual-per-step env (``label_observed`` = accepted).

        ``group`` / ``label`` / ``decision`` of -1 give the reset info (nobody decided on).
        """
        return {
            "fairness": counts,
            "group": group,
            "label": label,
            "decision": decision,
            "label_observed": 1 if decision == 1 else 0,
        }

    @property
    def n_groups(self) -> int:
        """Number of groups (columns of ``info["fairness"]``)."""
        return len(self.GROUP_NAMES)

    def _reset_uniforms(self, seed: int | None) -> None:
        """Drops buffered draws after a seeded reset or a replaced generator."""
        if (
            seed is not None or getattr(self, "_u_rng", None) is not self._np_random  # type: ignore[attr-defined]
        ):
            self._u_buf = []
            self._u_pos = 0
            self._u_rng = self._np_random  # type: ignore[attr-defined]

    def _uniform_row(self) -> list[float]:
        """Returns the next ``_UNIFORM_WIDTH`` uniform draws in ``[0, 1)`` as a list."""
        pos = self._u_pos
        buf = self._u_buf
        if pos >= len(buf):
            rng = self.np_random  # type: ignore[attr-defined]
            buf = self._u_buf = rng.random((self._UNIFORM_BLOCK, self._UNIFORM_WIDTH)).tolist()
            self._u_rng = rng
            pos = 0
        self._u_pos = pos + 1
        return buf[pos]


# ----------------------------------------------------------------------------- checks


#: Instance attributes a snapshot leaves out: ``spec`` is gymnasium's record of how the
#: env was made (set by ``gymnasium.make``), not its state; for an env RLlib builds from a
#: Tune registry name it holds RLlib's local entry-point function, which cannot be pickled.
SNAPSHOT_EXCLUDED = ("spec",)


def snapshot_envs(envs: Sequence[Any]) -> bytes:
    """The state of unwrapped envs (every attribute, random generators included), pickled.

    :func:`restore_envs` puts it into other instances of the same envs, which then reset
    and step exactly as the originals would (``tests/envs/test_env_state_snapshot.py``).
    The attributes of :data:`SNAPSHOT_EXCLUDED` are left out (each env keeps its own).
    """
    return pickle.dumps(
        [{k: v for k, v in vars(env).items() if k not in SNAPSHOT_EXCLUDED} for env in envs]
    )


def restore_envs(envs: Sequence[Any], snapshot: bytes) -> None:
    """Sets each env's attributes from :func:`snapshot_envs` of envs of the same kind.

    An array attribute whose shape and dtype match is overwritten in place, so views an
    env keeps into its own arrays (an observation buffer's per-node slice) stay views;
    every other attribute is replaced.
    """
    saved = pickle.loads(snapshot)
    if len(saved) != len(envs):
        raise ValueError(f"env snapshot: {len(saved)} envs saved, {len(envs)} to restore")
    for env, values in zip(envs, saved, strict=True):
        attributes = vars(env)
        for key, value in values.items():
            current = attributes.get(key)
            if (
                isinstance(current, np.ndarray)
                and isinstance(value, np.ndarray)
                and current.shape == value.shape
                and current.dtype == value.dtype
                and current.flags.writeable
            ):
                np.copyto(current, value)
            else:
                attributes[key] = value


def _fmt(value: Any) -> str:
    """Short one-line repr of a user value for error messages."""
    try:
        arr = np.asarray(value)
        if arr.ndim == 0 and arr.dtype.kind in "biuf":
            return repr(arr.item())  # 1e+300, not array2string's 1.e+300
        if arr.dtype.kind in "biuf" and arr.size <= 32:
            return np.array2string(arr, separator=", ", max_line_width=10_000).replace("\n", "")
    except Exception:  # noqa: BLE001 - any unprintable value falls back to repr
        pass
    text = " ".join(repr(value).split())  # one line, even for large arrays
    return text if len(text) <= 200 else text[:197] + "..."


def as_float_array(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """Returns ``value`` as a finite float64 array of ``shape`` (``None`` = any size >= 1).

    Raises:
        ValueError: if ``value`` is not numeric, has the wrong shape or is not finite.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}={_fmt(value)}: expected numbers of shape {_shape_text(shape)}"
        ) from None
    if arr.ndim != len(shape) or any(
        (want is None and got < 1) or (want is not None and got != want)
        for want, got in zip(shape, arr.shape)
    ):
        raise ValueError(
            f"{name}={_fmt(value)}: expected shape {_shape_text(shape)}, got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}={_fmt(value)}: all entries must be finite")
    return arr


def _shape_text(shape: tuple[int | None, ...]) -> str:
    """``(2, n)``-style text of a wanted shape (``None`` = any size)."""
    dims = ["n" if s is None else str(s) for s in shape]
    return f"({dims[0]},)" if len(dims) == 1 else "(" + ", ".join(dims) + ")"


def as_probabilities(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """Returns ``value`` as an array of probabilities in ``[0, 1]`` of ``shape``."""
    arr = as_float_array(name, value, shape)
    if np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"{name}={_fmt(value)}: every entry must lie in [0, 1]")
    return arr


def as_distributions(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """Returns ``value`` as probability vectors (last axis) that each sum to 1."""
    arr = as_probabilities(name, value, shape)
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > PROB_SUM_ATOL):
        raise ValueError(
            f"{name}={_fmt(value)}: probabilities must sum to 1 along the last axis "
            f"(got sums {_fmt(sums)})"
        )
    return arr


def as_positive(
    name: str, value: Any, *, allow_zero: bool = False, maximum: float = MAX_MAGNITUDE
) -> float:
    """Returns ``value`` as a float in ``(0, maximum]`` (``[0, maximum]`` with ``allow_zero``).

    Strings and bools are rejected, even where ``float()`` would convert them.

    Raises:
        ValueError: naming the argument, the bad value and the valid range.
    """
    out = math.nan
    if not isinstance(value, (str, bytes, bool, np.bool_)):
        try:
            out = float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    if not out <= maximum or out < 0.0 or (out == 0.0 and not allow_zero):
        low = "[0" if allow_zero else "(0"
        raise ValueError(f"{name}={_fmt(value)}: expected a number in {low}, {maximum:g}]")
    return out


def check_magnitude(name: str, value: Any, arr: np.ndarray, maximum: float = MAX_MAGNITUDE) -> None:
    """Raises unless every entry of the finite array ``arr`` has magnitude ``<= maximum``.

    Raises:
        ValueError: naming the argument, the bad value and the valid range.
    """
    if arr.size and float(np.max(np.abs(arr))) > maximum:
        raise ValueError(
            f"{name}={_fmt(value)}: every entry must lie in [{-maximum:g}, {maximum:g}]"
        )


def as_discrete_action(action: Any, n: int, valid: str) -> int:
    """Returns a discrete action in ``[0, n)`` as a python int.

    Accepted: python and numpy integers and 0-d integer arrays. Floats (even integral
    ones like ``1.0``), strings and bools are rejected rather than truncated or
    converted, so a policy emitting the wrong type fails loudly.

    Args:
        action: the action passed to ``step``.
        n: number of actions.
        valid: text naming the valid actions, for the error message.

    Raises:
        ValueError: naming the bad action and the valid ones.
    """
    if type(action) is int or (
        isinstance(action, (int, np.integer)) and not isinstance(action, bool)
    ):
        a = int(action)
    elif isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
        a = int(action)
    else:
        raise ValueError(
            f"action={_fmt(action)} ({type(action).__name__}): expected {valid}, as an integer"
        )
    if not 0 <= a < n:
        raise ValueError(f"action={_fmt(action)}: expected {valid}")
    return a


def as_count(name: str, value: Any, minimum: int = 1) -> int:
    """Returns ``value`` as an ``int >= minimum`` (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={_fmt(value)}: expected an integer >= {minimum}")
    return int(value)


def as_flag(name: str, value: Any) -> bool:
    """Returns ``value`` as a bool (accepts bools and numpy bools only)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={_fmt(value)}: expected True or False")
    return bool(value)


def check_any_flag(flags: Sequence[tuple[str, bool]]) -> None:
    """Raises unless at least one observation part is switched on."""
    if not any(on for _, on in flags):
        names = ", ".join(name for name, _ in flags)
        raise ValueError(f"{names} are all False: at least one observation part must stay on")
