"""Per-minibatch overheads of RLlib's torch learner removed through its extension points.

At the papers' PPO settings (2,048-step batches, minibatch 64, 10 epochs: 320 updates
per iteration on a ``[64, 64]`` network) RLlib 2.60's ``Learner.update`` spends most of
each update outside the maths (profile in ``docs/architecture.md``). Four of those costs
are removed here, each without changing a value that reaches the weights or the
reported metrics:

* **Minibatch slicing.** ``MiniBatchCyclicIterator`` slices and concatenates
  ``SampleBatch`` objects (a ``tree.map_structure`` and a ``SampleBatch`` constructor per
  piece). :class:`TensorMinibatchCycler` walks the same rows in the same order with
  plain tensor slices: the same cycling over epoch boundaries, the same
  ``np.random.permutation`` draw from numpy's global generator at every epoch end (what
  ``SampleBatch.shuffle`` draws), the same ``env_steps`` on every minibatch.
* **Metrics that only keep their last value.** Loss statistics are logged with
  ``window=1`` on every minibatch but only the last one survives the reduce. While the
  minibatch loop runs, such records are held back (last value per key) and written when
  it ends, before anything after the loop (``after_gradient_based_update``: PPO's KL
  coefficient) reads them; the steps-trained counters are summed and written once.
  Records with any other reduction pass straight through. Statistics that are only
  logged (PPO's policy and value losses, explained variance, entropy; the fairness
  learners' own) are computed on the last minibatch alone
  (:meth:`LeanLearnerMixin.last_value_log_due`): the reported values are the same.
* **Finite-gradient checks.** ``TorchLearner.apply_gradients`` tests every gradient
  tensor with ``torch.isfinite(...).all()`` twice (about 24 host syncs per minibatch for
  PPO). Here one ``torch._foreach_norm`` over all gradients decides: a tensor's 2-norm is
  finite iff every entry is finite (a finite tensor whose norm overflows takes RLlib's
  path, which then decides as before). With non-finite gradients RLlib's own
  ``apply_gradients`` runs unchanged (zeroing or skipping as configured).
* **PPO's loss.** Discrete-action modules get
  :func:`~rllib_fair.accel.ppo_loss.lean_ppo_loss` (RLlib's loss without the
  distribution objects, the same tensors).

Global-norm clipping is computed with ``torch._foreach_norm`` and ``torch._foreach_mul_``
(the same norms and products as RLlib's ``clip_gradients``, checked bit for bit in the
tests).

The mixin goes in front of a learner class that names it in ``ACCEL_MIXIN``
(:func:`rllib_fair.accel.classes.accelerated_class`, called by the config when the speed
layer is on);
``config.accel(learner=False)`` or ``config.accel(enabled=False)`` keeps RLlib's update
path entirely.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)

from rllib_fair.accel.flat_adam import FlatAdam

#: Reductions whose value after a reduce is the last pushed value when ``window=1``.
_LAST_VALUE_REDUCES = ("mean", "min", "max", "sum")


class TensorMinibatchCycler:
    """RLlib's ``MiniBatchCyclicIterator`` for one module's flat tensor columns.

    Yields ``MultiAgentBatch`` minibatches of exactly ``minibatch_size`` rows until every
    row was covered ``num_epochs`` times (or ``num_total_minibatches`` were made), a
    minibatch running over the end of the batch continuing at its start; when
    ``shuffle`` is set the rows are permuted at every pass's end with
    ``np.random.permutation(len)`` (numpy's global generator, as ``SampleBatch.shuffle``).
    ``on_last`` is called right before the last minibatch is yielded, ``on_done`` when
    the consumer asks for the next one after it (or closes the iterator).
    """

    def __init__(
        self,
        module_id: str,
        columns: dict[str, torch.Tensor],
        *,
        num_epochs: int,
        minibatch_size: int,
        shuffle: bool,
        num_total_minibatches: int = 0,
        env_steps: int,
        on_last=None,
        on_done=None,
    ) -> None:
        self.module_id = module_id
        self.columns = columns
        self.n = len(next(iter(columns.values())))
        if self.n == 0:
            raise ValueError(f"The batch for module_id {module_id} is empty")
        self.num_epochs = num_epochs
        self.minibatch_size = minibatch_size
        self.shuffle = shuffle
        self.num_total_minibatches = num_total_minibatches
        self.env_steps = env_steps
        self.on_last = on_last
        self.on_done = on_done

    def __len__(self) -> int:
        """The number of minibatches this iterator yields."""
        if self.num_total_minibatches > 0:
            return self.num_total_minibatches
        # Pass k ends in the first minibatch m whose rows reach k * n (m * size >= k * n),
        # and the iteration stops when pass ``num_epochs`` ended.
        return -(-(self.num_epochs * self.n) // self.minibatch_size)

    def __iter__(self):
        try:
            yield from self._minibatches()
        finally:
            if self.on_done is not None:
                self.on_done()

    def _minibatches(self):
        cols, n, size = self.columns, self.n, self.minibatch_size
        total = len(self)
        start = 0
        for made in range(total):
            need, pieces = size, []
            while start + need >= n:
                pieces.append({k: v[start:] for k, v in cols.items()})
                need -= n - start
                start = 0
                if self.shuffle:
                    perm = torch.from_numpy(np.random.permutation(n))  # noqa: NPY002 (RLlib's draw)
                    cols = {k: v[perm.to(v.device)] for k, v in cols.items()}
            end = start + need
            if end > start:
                pieces.append({k: v[start:end] for k, v in cols.items()})
            start = end
            if len(pieces) == 1:
                rows = pieces[0]
            else:
                rows = {k: torch.cat([p[k] for p in pieces]) for k in cols}
            if made == total - 1 and self.on_last is not None:
                self.on_last()
            yield MultiAgentBatch({self.module_id: SampleBatch(rows)}, self.env_steps)


class _DeferringMetrics:
    """A ``MetricsLogger`` front that holds back ``window=1`` records (last value wins).

    Every other call goes to the wrapped logger unchanged. :meth:`flush` writes the held
    records, in the order their keys were first seen, with their original arguments.
    """

    def __init__(self, metrics) -> None:
        self._metrics = metrics
        self._held: dict[tuple, tuple[Any, dict]] = {}

    def __getattr__(self, name):
        # Any other use (``peek``, ``reduce``, ...) sees every record written so far.
        self.flush()
        return getattr(self._metrics, name)

    @staticmethod
    def _key(key) -> tuple:
        return tuple(key) if isinstance(key, (list, tuple)) else (key,)

    def log_value(self, key, value, **kwargs) -> None:
        """Holds a ``window=1`` record back; passes any other one on as it came."""
        if self._last_value_only(kwargs):
            self._held[self._key(key)] = (value, kwargs)
        else:
            self._metrics.log_value(key, value, **kwargs)

    def log_dict(self, value_dict, **kwargs) -> None:
        """Holds back the leaves of a ``window=1`` dict; passes any other one on."""
        if self._last_value_only(kwargs):
            key = kwargs.pop("key", None)
            # log_dict's own default reduction is "mean" (log_value's is None)
            kwargs.setdefault("reduce", "mean")
            prefix = self._key(key) if key is not None else ()
            for sub, value in _flatten(value_dict):
                self._held[prefix + sub] = (value, kwargs)
        else:
            self._metrics.log_dict(value_dict, **kwargs)

    @staticmethod
    def _last_value_only(kwargs: dict) -> bool:
        """A record whose reduced value is its last value: window 1, a plain reduction."""
        extra = set(kwargs) - {"key", "reduce", "window"}
        return (
            kwargs.get("window") == 1
            and kwargs.get("reduce") in (None,) + _LAST_VALUE_REDUCES
            and not extra
        )

    def flush(self) -> None:
        held, self._held = self._held, {}
        for key, (value, kwargs) in held.items():
            self._metrics.log_value(key, value, **kwargs)


def _flatten(tree: dict, prefix: tuple = ()):
    """(key path, leaf) pairs of a nested dict."""
    for k, v in tree.items():
        if isinstance(v, dict):
            yield from _flatten(v, prefix + (k,))
        else:
            yield prefix + (k,), v


class LeanLearnerMixin:
    """Put in front of a PPO-family ``TorchLearner`` subclass (see the module docs).

    Only ever part of a class made by :func:`rllib_fair.accel.classes.accelerated_class`,
    i.e. when the config's speed layer and its learner part are on.
    """

    #: PPO's loss as :func:`~rllib_fair.accel.ppo_loss.lean_ppo_loss` (read by the
    #: PPO family's learner).
    accel_loss = True
    #: ``optimizer_impl: foreach`` builds :class:`~rllib_fair.accel.flat_adam.FlatAdam`.
    accel_flat_adam = True

    _lean_active: bool = False
    _lean_last_minibatch: bool = True
    _lean_grads_finite: bool | None = None

    # -- update loop ----------------------------------------------------------------
    @override(Learner)
    def update(self, *args, **kwargs):
        """RLlib's ``update``; its minibatch loop runs on the lean path when possible."""
        self._lean_active = True
        try:
            return super().update(*args, **kwargs)
        finally:
            self._lean_active = False
            self._lean_last_minibatch = True
            self._lean_end_loop()

    def _lean_begin_loop(self) -> None:
        """Holds ``window=1`` records and steps-trained counts back during the loop.

        The learner's ``metrics`` is put behind a :class:`_DeferringMetrics` while the
        minibatch loop runs: RLlib's loss and our learners log through ``self.metrics``
        on every minibatch, and ``MetricsLogger`` has no public way to hold records back.
        """
        if not isinstance(self.metrics, _DeferringMetrics):
            self.metrics = _DeferringMetrics(self.metrics)
        self._lean_steps = {}

    def _lean_end_loop(self) -> None:
        """Writes what the loop held back (called when the cycler is exhausted)."""
        proxy = self.metrics
        if isinstance(proxy, _DeferringMetrics):
            self.metrics = proxy._metrics
            proxy.flush()
            self._flush_steps_trained()

    @override(Learner)
    def _create_iterator_if_necessary(
        self,
        *,
        training_data,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        **kwargs,
    ):
        """A :class:`TensorMinibatchCycler` in place of RLlib's cyclic iterator.

        Used for one module's flat tensor columns; RLlib's iterator otherwise.
        """
        fallback = super()._create_iterator_if_necessary
        args = dict(
            num_total_minibatches=num_total_minibatches,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            shuffle_batch_per_epoch=shuffle_batch_per_epoch,
            **kwargs,
        )
        if not self._lean_active or training_data.data_iterators or not minibatch_size:
            return fallback(training_data=training_data, **args)
        batch = self._make_batch_if_necessary(training_data=training_data)
        for module_id in list(batch.policy_batches):
            if not self.should_module_be_updated(module_id, batch):
                del batch.policy_batches[module_id]
        if not batch.policy_batches:
            return {}
        if len(batch.policy_batches) != 1:
            return fallback(training_data=TrainingDataLike(batch), **args)
        ((module_id, module_batch),) = batch.policy_batches.items()
        columns = dict(module_batch)
        if (
            Columns.INFOS in columns
            or SampleBatch.SEQ_LENS in columns
            or module_batch.zero_padded
            or not columns
            or not all(isinstance(v, torch.Tensor) for v in columns.values())
            or len({len(v) for v in columns.values()}) != 1
        ):
            return fallback(training_data=TrainingDataLike(batch), **args)
        self._lean_last_minibatch = False  # set again by the cycler's last minibatch
        self._lean_begin_loop()
        return TensorMinibatchCycler(
            module_id,
            columns,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            shuffle=shuffle_batch_per_epoch and num_epochs > 1,
            num_total_minibatches=num_total_minibatches,
            env_steps=len(batch),
            on_last=self._lean_mark_last,
            on_done=self._lean_end_loop,
        )

    def _lean_mark_last(self) -> None:
        self._lean_last_minibatch = True

    def last_value_log_due(self) -> bool:
        """Whether a ``window=1`` record made now can reach the update's result.

        Inside the lean minibatch loop only the last minibatch's ``window=1`` records
        survive the reduce (each one replaces the previous); statistics that are only
        logged (not part of the loss) need computing then alone. Outside the loop (RLlib's
        update path, a direct ``compute_losses`` call) every record counts: True.
        """
        return not self._lean_active or self._lean_last_minibatch

    @override(TorchLearner)
    def _compute_off_policyness(self, batch) -> None:
        """RLlib's off-policyness record, computed for the last minibatch only.

        RLlib logs it with ``window=1``: earlier minibatches' values never reach a result.
        """
        if self.last_value_log_due():
            super()._compute_off_policyness(batch)

    @override(Learner)
    def _log_steps_trained_metrics(self, batch) -> None:
        """Summed while an update runs, written once by :meth:`_flush_steps_trained`."""
        if not isinstance(self.metrics, _DeferringMetrics):
            return super()._log_steps_trained_metrics(batch)
        steps = self._lean_steps
        for module_id, module_batch in batch.policy_batches.items():
            rows = len(module_batch)
            sizes = steps.setdefault(module_id, [])
            sizes.append(rows)
        steps.setdefault(ALL_MODULES, []).append(batch.env_steps())
        return None

    def _flush_steps_trained(self) -> None:
        """The steps-trained records RLlib writes per minibatch, written once.

        Sums go in as their totals; the mean minibatch size as the mean, which equals
        RLlib's per-minibatch mean because every minibatch of an update has the same
        size (the cycler always yields ``minibatch_size`` rows).
        """
        steps, self._lean_steps = self._lean_steps, {}
        env_steps = steps.pop(ALL_MODULES, [])
        log = self.metrics.log_value
        all_rows = 0
        for module_id, sizes in steps.items():
            rows = int(sum(sizes))
            all_rows += rows
            log((module_id, WEIGHTS_SEQ_NO), self._weights_seq_no, window=1)
            log(
                (module_id, MODULE_TRAIN_BATCH_SIZE_MEAN),
                float(np.mean(sizes)) if len(set(sizes)) > 1 else sizes[0],
                reduce="mean",
            )
            log((module_id, NUM_MODULE_STEPS_TRAINED), rows, reduce="sum")
            log(
                (module_id, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                rows,
                reduce="lifetime_sum",
                with_throughput=True,
            )
        if steps:
            log(
                (ALL_MODULES, NUM_MODULE_STEPS_TRAINED),
                all_rows,
                reduce="sum",
                with_throughput=True,
            )
            log(
                (ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                all_rows,
                reduce="lifetime_sum",
                with_throughput=True,
            )
        if env_steps:
            total = int(sum(env_steps))
            log((ALL_MODULES, NUM_ENV_STEPS_TRAINED), total, reduce="sum", with_throughput=True)
            log(
                (ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME),
                total,
                reduce="lifetime_sum",
                with_throughput=True,
            )

    # -- gradients ------------------------------------------------------------------
    @override(Learner)
    def postprocess_gradients(self, gradients_dict):
        """RLlib's gradient postprocessing (clipping, the global-norm record), one pass.

        RLlib's ``postprocess_gradients`` filters the gradients by optimiser twice per
        minibatch (once per module, again per optimiser inside
        ``postprocess_gradients_for_module``); here each optimiser's gradients are
        picked once, in its parameter order, and clipped by the same function with the
        same record. RLlib's methods run outside the lean loop, with ``log_gradients``,
        or when a subclass overrides ``postprocess_gradients_for_module``.
        """
        if (
            not self._lean_active
            or type(self).postprocess_gradients_for_module
            is not Learner.postprocess_gradients_for_module
        ):
            return super().postprocess_gradients(gradients_dict)
        module_ids = list(self.module.keys())
        configs = [self.config.get_config_for_module(m) for m in module_ids]
        if any(c.log_gradients for c in configs):
            return super().postprocess_gradients(gradients_dict)
        out = {}
        for module_id, config in zip(module_ids, configs):
            for name, optimizer in self.get_optimizers_for_module(module_id):
                grads = {}
                for ref in self._optimizer_parameters[optimizer]:
                    grad = gradients_dict.get(ref)
                    if grad is not None:
                        grads[ref] = grad
                if config.grad_clip is None:
                    out.update(grads)
                elif config.grad_clip:  # RLlib passes no gradient on for a clip of 0
                    norm = self._get_clip_function()(
                        grads, grad_clip=config.grad_clip, grad_clip_by=config.grad_clip_by
                    )
                    if config.grad_clip_by == "global_norm":
                        self.metrics.log_value(
                            key=(module_id, f"gradients_{name}_global_norm"),
                            value=norm,
                            window=1,
                        )
                    out.update(grads)
        return out

    @override(TorchLearner)
    def _get_clip_function(self):
        if not self._lean_active:
            return super()._get_clip_function()
        return self._lean_clip

    def _lean_clip(self, gradients_dict, *, grad_clip=None, grad_clip_by="value"):
        """RLlib's ``clip_gradients`` for ``global_norm``, with multi-tensor ops.

        Also records whether every gradient is finite. Other modes: RLlib's function.
        """
        from ray.rllib.utils.torch_utils import clip_gradients

        grads = [g for g in gradients_dict.values() if g is not None]
        if grad_clip is None or grad_clip_by != "global_norm" or not grads:
            return clip_gradients(gradients_dict, grad_clip=grad_clip, grad_clip_by=grad_clip_by)
        if any(g.requires_grad for g in grads):  # a higher-order backward's gradients
            grads = [g.detach() for g in grads]
        norms = torch.stack(torch._foreach_norm(grads, 2.0))
        finite = self._lean_grads_finite = bool(torch.isfinite(norms).all())
        big = 10e8
        if not finite:  # nan_to_num changes nothing in finite norms
            norms = norms.nan_to_num(neginf=-big, posinf=big)
        # torch.norm(x, 2.0) over all elements is this call
        total = torch.linalg.vector_norm(norms, 2.0)
        total = total.nan_to_num(neginf=-big, posinf=big)
        coeff = torch.clamp(grad_clip / torch.clamp(total + 1e-6, min=grad_clip), max=1.0)
        torch._foreach_mul_(grads, coeff)
        return total

    @override(TorchLearner)
    def apply_gradients(self, gradients_dict) -> None:
        """Sets the gradients and steps every optimiser if all gradients are finite.

        Finiteness is decided by one multi-tensor norm; RLlib's ``apply_gradients``
        handles the non-finite case.
        """
        finite, self._lean_grads_finite = self._lean_grads_finite, None
        if (
            not self._lean_active
            or self._grad_scalers is not None
            or self._lr_scheduler_classes is not None
        ):
            return super().apply_gradients(gradients_dict)
        grads = [g for g in gradients_dict.values() if g is not None]
        if finite is None and grads:
            norms = torch.stack(torch._foreach_norm([g.detach() for g in grads], 2.0))
            finite = bool(torch.isfinite(norms).all())
        if not finite and grads:
            return super().apply_gradients(gradients_dict)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, names in self._module_optimizers.items():
            for name in names:
                optimizer = self.get_optimizer(module_id, name)
                if _idle_torch_optimizer(optimizer):
                    continue  # e.g. SELLF's predictor Adam during PPO's minibatches
                optimizer.step()
        return None


def _idle_torch_optimizer(optimizer) -> bool:
    """Whether ``optimizer`` is one of torch's own with no parameter holding a gradient.

    Its ``step()`` would change nothing then (torch's optimizers skip parameters without
    a gradient and keep no per-step state outside them), so it is skipped.
    """
    if not (
        isinstance(optimizer, FlatAdam) or type(optimizer).__module__.startswith("torch.optim")
    ):
        return False
    return all(p.grad is None for group in optimizer.param_groups for p in group["params"])


class TrainingDataLike:
    """The minimal ``TrainingData`` RLlib's iterator path needs for a ready batch."""

    def __init__(self, batch: MultiAgentBatch) -> None:
        self.batch = batch
        self.batches = None
        self.batch_refs = None
        self.episodes = None
        self.episodes_refs = None
        self.data_iterators = None
