"""The speed layer: RLlib's sampling and update loops without their per-step bookkeeping.

Everything in rllib-fair that re-implements a piece of RLlib's machinery for speed, or
reads one of RLlib's private attributes, lives here and nowhere else
(``tests/test_private_rllib_names.py`` checks it). Each piece returns what RLlib's own
code returns, bit for bit (the equality tests are named in each module):

* :mod:`~rllib_fair.accel.pipelines`: the env runners' connector pipelines without
  per-piece timers, fused into one pass for flat Box observations and Discrete actions;
* :mod:`~rllib_fair.accel.env_runner`: :class:`~rllib_fair.accel.env_runner.LeanSamplingMixin`,
  RLlib's sampling loop without its per-step bookkeeping;
* :mod:`~rllib_fair.accel.module`: the PPO module's forward passes layer by layer and a
  cached train/eval mode;
* :mod:`~rllib_fair.accel.learner` and :mod:`~rllib_fair.accel.ppo_loss`: the PPO
  family's minibatch loop on plain tensors, last-value metrics written once, one
  finite-gradient check, and PPO's loss without distribution objects;
* :mod:`~rllib_fair.accel.flat_adam`: :class:`~rllib_fair.accel.flat_adam.FlatAdam`,
  torch's Adam on one contiguous buffer per parameter group (the PPO family's
  ``optimizer_impl: foreach`` with the learner part on);
* :mod:`~rllib_fair.accel.td3_learner`: TD3's consecutive minibatches and optimizer
  steps without per-parameter checks;
* :mod:`~rllib_fair.accel.internal_kv`: the Ray key-value store that carries env errors
  from env runners to the driver.
* :mod:`~rllib_fair.accel.shared_data`: RLlib's private connector ``shared_data`` key
  for the appended bootstrap step (read on every Ray version, not behind the gate).

**One switch.** ``config.accel(enabled=...)`` (the ``use_accel`` setting, default True)
turns the whole layer on or off; ``config.accel(sampling=..., learner=...)`` (the
``lean_sampling`` / ``lean_learner`` settings) the sampling loop or the learner loop
alone. The classes are chosen when the config is frozen (env runner, learner: the class
behind the mixin its ``ACCEL_MIXIN`` names, :mod:`~rllib_fair.accel.classes`) or a
pipeline is built: with the layer off, RLlib's own classes and loops run.

**One gate.** :mod:`~rllib_fair.accel.gate`: the layer runs only on the Ray versions it is
tested on (:data:`~rllib_fair.accel.gate.TESTED_RAY_VERSIONS`); on any other, RLlib's own
path runs and each process logs one line saying so. The modules that override RLlib's
private methods are imported only behind the gate.
"""

from rllib_fair.accel.gate import TESTED_RAY_VERSIONS, accel_active, version_tested

__all__ = ["TESTED_RAY_VERSIONS", "accel_active", "version_tested"]
