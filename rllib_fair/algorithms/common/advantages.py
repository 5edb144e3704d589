"""Advantage-regularisation pieces shared by POCAR (A-PPO), F-PPO-L and SELLF.

Pure torch functions of one minibatch: no state, no RLlib. The equations are in the
algorithms' READMEs (POCAR: Yu et al. 2022 and Xu et al. 2024, Eq. 28).
"""

from __future__ import annotations

import torch


def minmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Min-max normalisation over the masked entries, ``(x - min) / (max - min + 1e-8)``.

    The reference implementations of POCAR, F-PPO-L and SELLF put each advantage term on
    ``[0, 1]`` this way, per minibatch, before weighting and summing them.
    """
    valid = x[mask]
    lo, hi = valid.min(), valid.max()
    return (x - lo) / (hi - lo + 1e-8)


def pocar_terms(
    disparity: torch.Tensor, disparity_prev: torch.Tensor, omega: float, timing: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Value-thresholding and decrease-in-violation terms of A-PPO (Eq. 28).

    Args:
        disparity: Delta_t, per-step disparity after the decision at t.
        disparity_prev: Delta_{t-1}, before it.
        omega: tolerance.
        timing: ``"post"`` (reference code) or ``"pre"`` (paper's indexing).

    Returns:
        ``(vt, div)``, both <= 0.
    """
    if timing == "post":
        delta = disparity
        vt = torch.clamp(omega - delta, max=0.0)  # min(0, omega - Delta)
        # min(0, -1[Delta > omega] (Delta_t - Delta_{t-1})), the reference's div term
        div = torch.clamp(-(delta > omega).to(delta.dtype) * (delta - disparity_prev), max=0.0)
        return vt, div
    delta, delta_next = disparity_prev, disparity  # Delta(s_t), Delta(s_{t+1})
    vt = torch.clamp(omega - delta, max=0.0)  # Eq. 28, beta_1 term
    div = torch.clamp(delta - delta_next, max=0.0) * (delta > omega).to(delta.dtype)  # beta_2
    return vt, div


def regularizer_terms(
    disparity: torch.Tensor,
    disparity_prev: torch.Tensor,
    mask: torch.Tensor,
    *,
    omega: float,
    normalization: str,
    timing: str,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A-PPO's value-thresholding and decrease-in-violation terms as they are weighted.

    :func:`pocar_terms` for ``"none"`` (Eq. 28); each min-max normalised over the minibatch for
    ``"minmax"`` (a term constant over the minibatch, e.g. identically 0, becomes 0).
    """
    vt, div = pocar_terms(disparity.to(dtype), disparity_prev.to(dtype), omega, timing)
    if normalization == "none":
        return vt, div
    return minmax(vt, mask), minmax(div, mask)
