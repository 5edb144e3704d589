"""Adam on one contiguous buffer: torch's multi-tensor Adam, bit for bit, in a few ops.

The PPO family's networks are small (two MLPs, a dozen parameter tensors, about ten
thousand numbers) and PPO steps its optimiser once per minibatch (320 times per
2,048-step iteration at the papers' settings). At that size torch's multi-tensor Adam
costs its dispatch, not its arithmetic: on CPU each ``_foreach_*`` call loops over the
tensors one by one (eight calls, a dozen tensors each), and the per-parameter
bookkeeping around them (grouping by device, reading every step counter) comes on top.

:class:`FlatAdam` is ``torch.optim.Adam`` whose parameters, first and second moments
and step counters are views into one contiguous buffer each (per param group). Its
``step()`` copies the gradients into one buffer and runs the same element-wise
operations as torch's multi-tensor path on the whole buffer: ``lerp_``, ``mul_``,
``addcmul_``, ``sqrt``, ``div_``, ``add_``, ``addcdiv_``, with the same scalars (the bias
corrections from the shared step count). Element-wise IEEE arithmetic does not depend
on how the numbers are grouped into tensors, so every parameter and moment equals what
``torch.optim.Adam(foreach=True)`` (and torch's single-tensor loop) computes, bit for bit
(``tests/rllib/test_flat_adam.py``). ``state_dict()`` has torch's layout, so
checkpoints load into either class.

It runs on CPU parameters only: on a GPU, torch's multi-tensor ops are single kernels
already, and the flat path's bit-identity is tested on CPU. It falls back to torch's
own ``step()`` (and rebuilds its buffers on the next step) for anything else:
AMSGrad, weight decay, ``maximize``, a tensor learning rate, the capturable or
differentiable modes, half precision, mixed dtypes or devices, sparse or complex
parameters, a parameter without a gradient (Adam skips it, so the step counters part),
or a ``load_state_dict`` (torch puts new state tensors in place). Moving the module
(``.to(device)``) replaces the parameters' storage; the next step notices and rebuilds.
"""

from __future__ import annotations

import torch

__all__ = ["FlatAdam"]


class _FlatGroup:
    """One param group's buffers: parameters, moments and step counters, and its sizes."""

    def __init__(self, group: dict, state: dict, step: float) -> None:
        params = group["params"]
        self.options = _options(group)
        device, dtype = params[0].device, params[0].dtype
        sizes = [p.numel() for p in params]
        total = sum(sizes)
        self.params = params
        self.sizes = sizes
        self.flat_param = torch.empty(total, device=device, dtype=dtype)
        self.flat_avg = torch.zeros(total, device=device, dtype=dtype)
        self.flat_avg_sq = torch.zeros(total, device=device, dtype=dtype)
        self.flat_grad = torch.empty(total, device=device, dtype=dtype)
        # torch keeps the (non-capturable) step counters on the CPU as float32 scalars
        self.flat_step = torch.full((len(params),), step, dtype=torch.float32)
        offset = 0
        for i, (p, n) in enumerate(zip(params, sizes)):
            old = state.get(p, {})
            view = slice(offset, offset + n)
            self.flat_param[view].copy_(p.detach().reshape(-1))
            if "exp_avg" in old:
                self.flat_avg[view].copy_(old["exp_avg"].reshape(-1))
                self.flat_avg_sq[view].copy_(old["exp_avg_sq"].reshape(-1))
            p.data = self.flat_param[view].view_as(p)
            state[p] = {
                "step": self.flat_step[i],
                "exp_avg": self.flat_avg[view].view_as(p),
                "exp_avg_sq": self.flat_avg_sq[view].view_as(p),
            }
            offset += n
        self.step = step
        self.pointers = [p.data_ptr() for p in params]

    def ready(self, group: dict) -> bool:
        """Whether this step can run on the buffers.

        The parameters are still their views, every one has a gradient and the group's
        options did not change.
        """
        params = group["params"]
        return (
            params is self.params
            and _options(group) == self.options
            and [p.data_ptr() for p in params] == self.pointers
            and all(p.grad is not None for p in params)
        )


def _options(group: dict) -> tuple:
    """The group options that decide whether the flat path applies."""
    return tuple(group.get(k) for k in _OPTION_KEYS) + (
        type(group["lr"]),
        type(group["betas"][0]),
        type(group["betas"][1]),
    )


_OPTION_KEYS = ("amsgrad", "maximize", "capturable", "differentiable", "fused", "weight_decay")


def _supported(group: dict) -> bool:
    params = group["params"]
    if not params:
        return False
    first = params[0]
    return (
        not group.get("amsgrad")
        and not group.get("maximize")
        and not group.get("capturable")
        and not group.get("differentiable")
        and not group.get("fused")
        and group.get("weight_decay", 0) == 0
        and not isinstance(group["lr"], torch.Tensor)
        and not isinstance(group["betas"][0], torch.Tensor)
        and not isinstance(group["betas"][1], torch.Tensor)
        and first.device.type == "cpu"
        and first.dtype in (torch.float32, torch.float64)
        and all(
            p.device == first.device
            and p.dtype == first.dtype
            and not p.is_sparse
            and not p.is_complex()
            and p.is_contiguous()
            and p.grad is not None
            and not p.grad.is_sparse
            for p in params
        )
    )


class FlatAdam(torch.optim.Adam):
    """``torch.optim.Adam`` stepping every parameter of a group as one buffer.

    Bit-identical to ``torch.optim.Adam(foreach=True)`` (see the module docs); construct
    it with the same arguments.
    """

    def __init__(self, params, **kwargs) -> None:
        kwargs.setdefault("foreach", True)
        super().__init__(params, **kwargs)
        self._flat: list[_FlatGroup | None] = [None] * len(self.param_groups)

    def load_state_dict(self, state_dict) -> None:
        """Torch's ``load_state_dict``; the buffers are rebuilt from it on the next step."""
        super().load_state_dict(state_dict)
        self._flat = [None] * len(self.param_groups)

    def add_param_group(self, param_group) -> None:
        """Torch's ``add_param_group``; the new group gets its buffers on its first step."""
        super().add_param_group(param_group)
        if hasattr(self, "_flat"):
            self._flat.append(None)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Torch's ``zero_grad``; ``set_to_none`` (RLlib's call) as a plain loop.

        Torch's version also opens a profiler range on every call, which costs more
        than the loop itself at this size.
        """
        if not set_to_none:
            super().zero_grad(set_to_none=False)
            return
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self, closure=None):
        """One Adam step; see the module docs for when torch's own step runs instead."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        groups = self.param_groups
        flats = self._flat
        if len(flats) != len(groups) or not all(
            f is not None and f.ready(g) for f, g in zip(flats, groups)
        ):
            if all(p.grad is None for g in groups for p in g["params"]):
                return loss  # torch's step changes nothing then (no state, no counter moves)
            flats = self._flat = [None] * len(groups)
            if not all(_supported(g) for g in groups):
                super().step()
                return loss
            for i, group in enumerate(groups):
                flats[i] = self._build(group)
            if not all(flats):  # the step counters differ: torch's step keeps them
                self._flat = [None] * len(groups)
                super().step()
                return loss
        for group, flat in zip(groups, flats):
            self._step_group(group, flat)
        return loss

    def _build(self, group: dict) -> _FlatGroup | None:
        params = group["params"]
        state = self.state
        steps = {float(state[p]["step"]) if "step" in state.get(p, {}) else 0.0 for p in params}
        if len(steps) != 1:
            return None
        return _FlatGroup(group, self.state, steps.pop())

    @staticmethod
    def _step_group(group: dict, flat: _FlatGroup) -> None:
        beta1, beta2 = group["betas"]
        lr, eps = group["lr"], group["eps"]
        grad = flat.flat_grad
        torch.cat([p.grad.reshape(-1) for p in flat.params], out=grad)
        # the step counters (torch adds 1.0 to each; they stay equal)
        flat.flat_step.add_(1.0)
        flat.step += 1.0
        t = flat.step
        # the first and second moments, as torch's multi-tensor path updates them
        flat.flat_avg.lerp_(grad, 1 - beta1)
        flat.flat_avg_sq.mul_(beta2)
        flat.flat_avg_sq.addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**t
        bias_correction2 = 1 - beta2**t
        step_size = (lr / bias_correction1) * -1
        denom = flat.flat_avg_sq.sqrt()
        denom.div_(bias_correction2**0.5)
        denom.add_(eps)
        flat.flat_param.addcdiv_(flat.flat_avg, denom, value=step_size)
