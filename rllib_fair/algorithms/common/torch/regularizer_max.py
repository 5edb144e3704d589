"""The learner metric that shows whether A-PPO's two term weights mattered to a run."""

from __future__ import annotations

import torch

from rllib_fair.rllib import keys


def log_regularizer_max(metrics, module_id, vt: torch.Tensor, div: torch.Tensor, mask) -> None:
    """Logs ``pocar_regularizer_max``: the largest ``|vt|``, ``|div|`` of one minibatch.

    ``vt`` and ``div`` as they are weighted (POCAR's and F-PPO-L's learners:
    :func:`rllib_fair.algorithms.common.advantages.regularizer_terms`).

    Reduced by max over the iteration's minibatches and learners; 0 over a whole run
    proves the run did not depend on the weights of the two terms (``INERT_GRID``). NaN
    is logged as inf: RLlib's max skips NaNs, and a NaN term proves nothing.
    """
    largest = torch.maximum(vt[mask].abs().max(), div[mask].abs().max()).detach()
    metrics.log_value(
        (module_id, keys.POCAR_REGULARIZER_MAX),
        torch.nan_to_num(largest, nan=float("inf")),
        reduce="max",
        clear_on_reduce=True,
    )
