"""Classes with the speed layer's mixin in front, made when the config asks for them.

A class that has a speed-layer variant names its mixin in ``ACCEL_MIXIN``
(``"module:Class"``): :class:`~rllib_fair.rllib.env_runner.FairEnvRunner`, the PPO
family's and TD3's learners. Where the speed layer is on, the config uses
:func:`accelerated_class` of its env runner and learner classes; the mixin's module is
imported only then (it overrides RLlib's private methods, which the gate keeps to the
tested Ray versions).
"""

from __future__ import annotations

import importlib

_MADE: dict[type, type] = {}


def accelerated_class(cls: type) -> type:
    """``cls`` behind the mixin its ``ACCEL_MIXIN`` names (``cls`` itself if none).

    The class made is ``Accel<cls>`` with the mixin first in its bases, made once per
    process and ``cls``, so every call returns the same class (Ray sends it to remote
    actors by value).
    """
    path = getattr(cls, "ACCEL_MIXIN", None)
    if not path:
        return cls
    module, _, name = path.partition(":")
    mixin = getattr(importlib.import_module(module), name)
    if issubclass(cls, mixin):
        return cls
    made = _MADE.get(cls)
    if made is None:
        made = type(
            f"Accel{cls.__name__}",
            (mixin, cls),
            {
                "__module__": cls.__module__,
                "__doc__": f"{cls.__name__} behind the speed layer's {mixin.__name__}.",
            },
        )
        _MADE[cls] = made
    return made
