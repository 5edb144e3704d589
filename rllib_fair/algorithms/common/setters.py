"""The one config setter: RLlib's ``NotProvided`` convention as a function.

Every algorithm config's ``training()`` names each of its settings as a keyword argument
defaulting to ``NotProvided`` (so the signature and the generated docs show them all, as
in RLlib's own configs), hands the remaining keywords to its parent's ``training()`` and
its own to :func:`set_provided`::

    @override(FairPPOConfig)
    def training(self, *, beta_0=NotProvided, omega=NotProvided, **kwargs):
        super().training(**kwargs)
        return set_provided(self, beta_0=beta_0, omega=omega)
"""

from __future__ import annotations

from typing import TypeVar

from ray.rllib.algorithms.algorithm_config import NotProvided

C = TypeVar("C")


def set_provided(config: C, **values) -> C:
    """Sets every ``values`` item that is not ``NotProvided`` as an attribute of ``config``.

    Args:
        config: the config to update (its ``__init__`` defines every setting).
        **values: setting name -> value; ``NotProvided`` leaves the setting as it is.

    Returns:
        ``config``, so a setter can ``return set_provided(self, ...)``.

    Raises:
        AttributeError: one line, for a name the config does not define (a typo in a
            setter would otherwise create a new attribute nothing reads).
    """
    for key, value in values.items():
        if value is NotProvided:
            continue
        if not hasattr(config, key):
            raise AttributeError(
                f"set_provided: {type(config).__name__} has no setting {key!r} (define it "
                "in __init__ first)"
            )
        setattr(config, key, value)
    return config
