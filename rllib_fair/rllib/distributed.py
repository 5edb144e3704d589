"""Keeping learner-side fairness state equal across data-parallel learners.

With ``num_learners >= 2`` RLlib wraps each learner's module in torch's
DistributedDataParallel and gives every learner its own shard of the train batch.
DDP averages the *gradients* of the loss, so the policy and value weights stay equal;
anything a learner computes from its shard outside the loss does not. The fairness
algorithms have three such pieces, and each goes through the helpers here:

* ELBERT-PO's batch estimates of eta^S and eta^D (sums over the whole train batch):
  :func:`all_reduce_sum`;
* SELLF's per-group batch statistics a^i, r^i, phi-tilde^i: :func:`all_reduce_sum`;
* SELLF's memory of accepted samples, on which every learner trains its copy of the
  label predictor with the same seeded minibatches: :func:`all_gather_rows`, so every
  learner stores the samples of every shard in the same order.

Without an initialised process group (one local learner, the default) every helper
returns its input unchanged, so single-learner runs are bit-for-bit what they were.
The collectives use the module's device (gloo on CPU, NCCL on GPU: Ray Train's
backend choice).
"""

from __future__ import annotations

import numpy as np
import torch


def world_size() -> int:
    """Number of data-parallel learners in this process group (1 without one)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def all_reduce_sum(x: np.ndarray, device: torch.device | str = "cpu") -> np.ndarray:
    """Element-wise sum of ``x`` over all learners (float64 in, float64 out)."""
    x = np.asarray(x, dtype=np.float64)
    if world_size() == 1:
        return x
    t = torch.as_tensor(x, dtype=torch.float64, device=device).contiguous()
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.SUM)
    return t.cpu().numpy()


def all_gather_rows(
    arrays: dict[str, np.ndarray], device: torch.device | str = "cpu"
) -> dict[str, np.ndarray]:
    """Concatenates the rows of each array over all learners, in rank order.

    Every learner passes arrays with the same keys, dtypes and trailing shapes but
    possibly different row counts; every learner gets the same concatenation back.
    """
    if world_size() == 1:
        return arrays
    dist = torch.distributed
    n = len(next(iter(arrays.values())))
    counts = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world_size())]
    dist.all_gather(counts, torch.tensor([n], dtype=torch.int64, device=device))
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes)
    out = {}
    for key, a in arrays.items():
        a = np.asarray(a)
        dtype = torch.float64 if a.dtype.kind == "f" else torch.int64
        padded = torch.zeros((longest, *a.shape[1:]), dtype=dtype, device=device)
        if n:
            padded[:n] = torch.as_tensor(a, dtype=dtype, device=device)
        parts = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(parts, padded)
        rows = [p[:s].cpu().numpy() for p, s in zip(parts, sizes, strict=True)]
        out[key] = np.concatenate(rows).astype(a.dtype, copy=False)
    return out


def broadcast_parameters(module: torch.nn.Module) -> None:
    """Copies rank 0's parameters of ``module`` to every learner (in place).

    For networks a learner trains outside DDP's loss (SELLF's label predictor): DDP
    ignores them, so they are made equal here after construction and after each of
    their own updates.
    """
    if world_size() == 1:
        return
    with torch.no_grad():
        for p in module.parameters():
            torch.distributed.broadcast(p.data, src=0)


def exclude_from_ddp(module: torch.nn.Module, prefix: str) -> None:
    """Tells DDP to ignore the parameters of ``module`` under ``prefix`` (e.g. ``predictor``).

    Their gradients are then neither expected in the loss nor all-reduced; call before
    RLlib wraps the module (i.e. in the module's ``setup()``). Uses torch's documented
    workaround ``DistributedDataParallel._set_params_and_buffers_to_ignore_for_model``.
    """
    names = [n for n, _ in module.named_parameters() if n.startswith(prefix + ".")]
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        module, names
    )


def replicated_state(learner) -> dict:
    """Everything a learner keeps between updates, as numpy, metrics excluded.

    Module weights, optimizer state, the algorithm's own learner state (SELLF's memory,
    policy store, counters and RNG) and, when the learner defines
    ``fairness_batch_state()``, the fairness estimates of its last batch (ELBERT-PO's
    eta and rates). With data-parallel learners this must be identical on every
    learner after an update; the scale-out tests compare it across learners.
    """
    from ray.rllib.utils.numpy import convert_to_numpy

    state = convert_to_numpy(learner.get_state(not_components=["metrics_logger"]))
    extra = getattr(learner, "fairness_batch_state", None)
    if extra is not None:
        state["fairness_batch_state"] = convert_to_numpy(extra())
    return state
