"""L-UCBFair's action regions and feature maps (numpy only; no Ray, no torch).

Yin et al. 2023, Sec. 3.1.1 "Adaptive Search Policy": the
action box is cut into ``M`` regions, the policy is a softmax over regions and the action
is drawn uniformly inside the chosen region. Ass. 3.1 (linear MDP) needs a feature map
``phi(s, a) in R^d`` with ``||phi||_2 <= 1``; the paper trained one offline (App. D.1,
not available), so this module offers (docs/methods/yin2023.md, "L-UCBFair"):

* ``"rbf"`` (default): per-group Gaussian RBFs over ``(q_k, a_k)`` on a 4x4 grid, each
  group's block normalised to sum 1/2 (normalising the concatenation would mix the
  groups and break additivity over them), ``d = 32``;
* ``"tabular"``: one-hot over (cell of an ``n x n`` grid of ``q``) x (region), an exact
  linear MDP for piecewise-constant dynamics;
* ``"learned"``: a small MLP ending in a softmax, weights in an ``.npz`` written by
  ``scripts/train_lucbfair_features.py`` (the package's recipe);
* a dotted path ``"pkg.module:function"`` (or ``"pkg.module.function"``) to a user
  callable ``phi(states[N, 2], actions[N, 2]) -> [N, d]``.

States are the qualification rates ``q = (q_0, q_1)``; actions are the two thresholds.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FEATURE_MAPS: tuple[str, ...] = ("rbf", "tabular", "learned")
#: Folder of the learned maps shipped with the package (``replicator_features.npz``:
#: fitted on ``fair/Replicator-v0`` with its default env_config).
SHIPPED_DIR = Path(__file__).resolve().parent


def region_grid(
    half_width: float = 0.1, low: float = 0.0, high: float = 1.0, dim: int = 2
) -> tuple[np.ndarray, float]:
    """Centres ``[M, dim]`` and the actual half-width of the regular region grid.

    As the reference's ``split_region``: ``n = ceil((high - low) / (2 eps))`` cells per
    axis, half-width ``(high - low) / (2 n)``, centres
    ``linspace(low - eps, high + eps, n + 2)[1:-1]``; the cubes are the Voronoi cells of
    the centres (the paper's "Voronoi partition"). Centres are ordered with the first
    action dimension slowest (``np.meshgrid(..., indexing="ij")``).
    """
    if not half_width > 0:
        raise ValueError(f"region_half_width: {half_width!r} is invalid; valid: a number > 0")
    n = max(1, math.ceil((high - low) / (2.0 * half_width) - 1e-9))
    eps = (high - low) / (2.0 * n)
    axis = np.linspace(low - eps, high + eps, n + 2)[1:-1]
    mesh = np.meshgrid(*([axis] * dim), indexing="ij")
    return np.stack(mesh, axis=-1).reshape(-1, dim), float(eps)


def region_index(
    actions: Any, half_width: float, low: float = 0.0, high: float = 1.0
) -> np.ndarray:
    """Index of the region (as ordered by :func:`region_grid`) holding each action."""
    a = np.asarray(actions, dtype=np.float64)
    n = max(1, math.ceil((high - low) / (2.0 * half_width) - 1e-9))
    cell = np.clip(np.floor((a - low) / (high - low) * n), 0, n - 1).astype(np.int64)
    idx = np.zeros(cell.shape[:-1], dtype=np.int64)
    for j in range(cell.shape[-1]):
        idx = idx * n + cell[..., j]
    return idx


def sample_in_regions(
    rng: np.random.Generator,
    centres: np.ndarray,
    index: Any,
    half_width: float,
    low: float = 0.0,
    high: float = 1.0,
    uniforms: np.ndarray | None = None,
) -> np.ndarray:
    """Uniform points in the chosen regions (``a ~ Uniform(region i)``), clipped to the box.

    ``uniforms`` (same shape as the result, values in ``[0, 1)``) replaces the draws, for
    the reference mode that reuses one draw per episode.
    """
    c = centres[np.asarray(index)]
    u = rng.random(c.shape) if uniforms is None else np.broadcast_to(uniforms, c.shape)
    return np.clip(c + (2.0 * u - 1.0) * half_width, low, high)


class FeatureMap:
    """A feature map ``phi(states[N, 2], actions[N, 2]) -> [N, dim]`` with its dimension."""

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], dim: int, name: str):
        self.fn = fn
        self.dim = int(dim)
        self.name = name

    def __call__(self, states: Any, actions: Any) -> np.ndarray:
        """Features of the pairs (leading shapes of states and actions broadcast)."""
        s = np.asarray(states, dtype=np.float64)
        a = np.asarray(actions, dtype=np.float64)
        shape = np.broadcast_shapes(s.shape[:-1], a.shape[:-1])
        s = np.broadcast_to(s, (*shape, s.shape[-1])).reshape(-1, s.shape[-1])
        a = np.broadcast_to(a, (*shape, a.shape[-1])).reshape(-1, a.shape[-1])
        out = np.asarray(self.fn(s, a), dtype=np.float64)
        return out.reshape(*shape, out.shape[-1])

    def all_regions(self, states: Any, centres: np.ndarray) -> np.ndarray:
        """``phi(s, c_i)`` for every state and centre: ``[N, M, dim]``."""
        s = np.asarray(states, dtype=np.float64)
        return self(s[:, None, :], centres[None, :, :])


def rbf_features(
    states: np.ndarray,
    actions: np.ndarray,
    centres: tuple[float, ...] = (0.125, 0.375, 0.625, 0.875),
    sigma: float = 0.25,
) -> np.ndarray:
    """Per-group 2-D Gaussian RBFs over ``(q_k, a_k)``, each block summing to 1/2 (E12)."""
    c = np.asarray(centres, dtype=np.float64)
    cq, ca = np.meshgrid(c, c, indexing="ij")
    cq, ca = cq.reshape(-1), ca.reshape(-1)
    blocks = []
    for k in (0, 1):
        d2 = (states[:, k : k + 1] - cq) ** 2 + (actions[:, k : k + 1] - ca) ** 2
        rho = np.exp(-d2 / (2.0 * sigma**2))
        blocks.append(0.5 * rho / rho.sum(axis=1, keepdims=True))
    return np.concatenate(blocks, axis=1)


def tabular_features(
    states: np.ndarray, actions: np.ndarray, state_cells: int = 5, half_width: float = 0.1
) -> np.ndarray:
    """One-hot over (cell of a ``state_cells^2`` grid of q) x (action region)."""
    s_idx = region_index(states, 1.0 / (2 * state_cells))
    a_idx = region_index(actions, half_width)
    n_regions = len(region_grid(half_width)[0])
    out = np.zeros((len(states), state_cells**2 * n_regions))
    out[np.arange(len(states)), s_idx * n_regions + a_idx] = 1.0
    return out


def learned_forward(params: dict[str, np.ndarray], states: np.ndarray, actions: np.ndarray):
    """The learned map: MLP over ``(q_0, q_1, a_0, a_1)`` (ReLU) then a softmax."""
    x = np.concatenate([states[:, :2], actions[:, :2]], axis=1)
    n_layers = sum(1 for k in params if k.startswith("W"))
    for i in range(n_layers):
        x = x @ params[f"W{i}"] + params[f"b{i}"]
        if i < n_layers - 1:
            x = np.maximum(x, 0.0)
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


def resolve_learned_path(path: Any) -> Path:
    """The ``.npz`` of a learned map: ``path``, or the shipped file of that name.

    ``path`` itself if that file exists, otherwise a file of that name shipped with the
    package (:data:`SHIPPED_DIR`), so a tuned example can name
    ``replicator_features.npz`` from any working directory.

    Raises:
        ValueError: neither file exists (one line naming both places).
    """
    given = Path(str(path)).expanduser()
    if given.is_file():
        return given
    shipped = SHIPPED_DIR / given.name
    if given.name and shipped.is_file():
        return shipped
    valid = ", ".join(sorted(p.name for p in SHIPPED_DIR.glob("*.npz"))) or "none shipped"
    raise ValueError(
        f"feature_kwargs.path: {str(path)!r} is invalid (no such file, nor in {SHIPPED_DIR}); "
        f"valid: an existing .npz written by scripts/train_lucbfair_features.py or a shipped "
        f"map ({valid})"
    )


def load_learned(path: Any) -> dict[str, np.ndarray]:
    """Weights ``W0, b0, ...`` of a learned map from its ``.npz`` (:func:`resolve_learned_path`)."""
    with np.load(resolve_learned_path(path)) as data:
        return {k: np.asarray(data[k], dtype=np.float64) for k in data.files if k[0] in "Wb"}


def _import_callable(path: str) -> Callable:
    mod, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not mod or not attr:
        raise ValueError(
            f"feature_map: {path!r} is invalid; valid: {', '.join(FEATURE_MAPS)} or "
            "'package.module:function'"
        )
    return getattr(importlib.import_module(mod), attr)


def make_feature_map(spec: Any = "rbf", **kwargs: Any) -> FeatureMap:
    """Builds a :class:`FeatureMap` from a name, a dotted path or a callable.

    Keyword arguments (the config's ``feature_kwargs``): ``rbf``: ``centres``, ``sigma``;
    ``tabular``: ``state_cells``, ``half_width``; ``learned``: ``path`` (the ``.npz``; a
    bare name such as ``replicator_features.npz`` also finds the shipped file).
    """
    if spec == "rbf":
        centres = tuple(kwargs.get("centres", (0.125, 0.375, 0.625, 0.875)))
        sigma = float(kwargs.get("sigma", 0.25))
        return FeatureMap(
            lambda s, a: rbf_features(s, a, centres, sigma), 2 * len(centres) ** 2, "rbf"
        )
    if spec == "tabular":
        cells = int(kwargs.get("state_cells", 5))
        hw = float(kwargs.get("half_width", 0.1))
        n_regions = len(region_grid(hw)[0])
        return FeatureMap(
            lambda s, a: tabular_features(s, a, cells, hw), cells**2 * n_regions, "tabular"
        )
    if spec == "learned":
        if "path" not in kwargs:
            raise ValueError(
                "feature_kwargs: {} is invalid for feature_map='learned'; valid: "
                "{'path': '<weights .npz written by scripts/train_lucbfair_features.py>'}"
            )
        params = load_learned(str(kwargs["path"]))
        dim = params[f"b{sum(1 for k in params if k.startswith('W')) - 1}"].shape[0]
        return FeatureMap(lambda s, a: learned_forward(params, s, a), dim, "learned")
    fn = spec if callable(spec) else _import_callable(str(spec))
    probe = np.asarray(fn(np.full((1, 2), 0.5), np.full((1, 2), 0.5)))
    if probe.ndim != 2 or probe.shape[0] != 1:
        raise ValueError(
            f"feature_map: {spec!r} is invalid (returned shape {probe.shape}); valid: a "
            "callable phi(states[N, 2], actions[N, 2]) -> [N, d]"
        )
    return FeatureMap(fn, probe.shape[1], getattr(fn, "__name__", "callable"))
