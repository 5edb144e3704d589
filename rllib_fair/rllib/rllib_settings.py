"""RLlib's own settings, checked by the validation of every config of this package.

RLlib's ``AlgorithmConfig.validate()`` checks few values: a negative ``gamma``, a string
``num_epochs`` or a misspelt ``model_config`` activation pass it and fail later, inside a
remote actor. :meth:`rllib_fair.rllib.config.FairnessConfigMixin.validate` therefore also
calls :func:`check_rllib_settings`, which checks every setting whose value differs from
the config class's default:

* the RLlib settings declared in :data:`rllib_fair.settings.RLLIB_SETTINGS` (unless the
  class declares the name itself; its own declaration is checked by ``check_object``);
* every other public setting by the kind of its default: true or false where the default
  is a boolean; a number, null or a list where it is a number (RLlib takes ranges and
  schedules as lists in places);
* the ``model_config`` entries: those declared in :data:`MODEL_SETTINGS`, the others by
  the kind of their default in RLlib's ``DefaultModelConfig`` (or the algorithm's own
  model-config additions).

A value equal to the class default (of the same type) is RLlib's own choice and is not
checked: TD3 keeps ``lr=None`` (it has one learning rate per network), an algorithm
without minibatches keeps ``minibatch_size=None``. Settings RLlib marks deprecated
(default ``-1``) are not checked either.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from rllib_fair.settings import (
    RLLIB_SETTINGS,
    Setting,
    SettingError,
    collect,
    integer,
    number,
    show,
)

#: RLlib's ``DEPRECATED_VALUE``: the default of settings it still stores but never reads.
DEPRECATED_VALUE = -1

#: The activation names RLlib's torch models accept.
ACTIVATIONS = ("relu", "tanh", "elu", "swish", "silu", "linear")


def _positive_ints(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
    )


def _activation(value: Any) -> bool:
    """What RLlib's torch ``get_activation_fn`` accepts for a layer: a name (or null)."""
    if not isinstance(value, str):
        return False
    if value.lower() in ACTIVATIONS:
        return True
    from torch import nn

    cls = getattr(nn, value, None)
    return isinstance(cls, type) and cls.__module__ == "torch.nn.modules.activation"


def _hiddens(name: str, valid: str) -> Setting:
    return Setting(name, "custom", "layer sizes", predicate=_positive_ints, valid=valid)


def _activation_setting(name: str) -> Setting:
    return Setting(
        name,
        "custom",
        "activation of the layers",
        predicate=_activation,
        none=True,
        valid=f"one of {', '.join(ACTIVATIONS)} (or a torch.nn activation class name such as GELU)",
    )


_LAYERS = "a list of positive integers (layer sizes), e.g. [64, 64]"

#: Declarations of ``model_config`` entries (RLlib's ``DefaultModelConfig`` and the
#: algorithms' own additions); other entries are checked by the kind of their default.
MODEL_SETTINGS: tuple[Setting, ...] = (
    _hiddens("fcnet_hiddens", _LAYERS),
    _hiddens("head_fcnet_hiddens", _LAYERS),
    _hiddens("fusionnet_hiddens", _LAYERS),
    _hiddens("predictor_hiddens", "a list of positive integers ([] allowed)"),
    _activation_setting("fcnet_activation"),
    _activation_setting("head_fcnet_activation"),
    _activation_setting("conv_activation"),
    _activation_setting("fusionnet_activation"),
    integer("max_seq_len", "time steps per sequence of a recurrent model", 1),
    integer("lstm_cell_size", "size of an LSTM cell", 1),
    number("log_std_clip_param", "clipping of the log standard deviation", 0, low_open=True),
)

_RLLIB = {s.name: s for s in RLLIB_SETTINGS}
_MODEL = {s.name: s for s in MODEL_SETTINGS}
_MISSING = object()


@functools.cache
def _default_of(cls: type) -> Any:
    """A config of ``cls`` with its defaults (None if ``cls()`` cannot be built)."""
    try:
        return cls()
    except Exception:  # noqa: BLE001 - a subclass that needs arguments: no defaults known
        return None


def _unchanged(value: Any, default: Any) -> bool:
    """``value`` is ``default``: equal and of the same type (True is not 1)."""
    if value is default:
        return True
    if type(value) is not type(default):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - e.g. arrays: compared as changed
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind_problem(key: str, value: Any, default: Any) -> SettingError | None:
    """The error of a value whose kind differs from its default's, or None."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            return SettingError(key, f"{key}: {show(value)} is invalid; valid: true or false")
    elif _is_number(default) and default != DEPRECATED_VALUE:
        if value is not None and not _is_number(value) and not isinstance(value, (list, tuple)):
            return SettingError(
                key,
                f"{key}: {show(value)} ({type(value).__name__}) is invalid; valid: a number "
                f"(default {default!r})",
            )
    return None


def _model_defaults(cfg: Any) -> dict[str, Any]:
    """RLlib's ``DefaultModelConfig`` defaults updated with ``cfg``'s ``model_config``."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    out = {
        f.name: None if f.default is dataclasses.MISSING else f.default
        for f in dataclasses.fields(DefaultModelConfig)
    }
    if cfg is not None:
        try:
            out.update(cfg.model_config)
        except Exception:  # noqa: BLE001 - the env check reports what is wrong with the env
            pass
    return out


def check_rllib_settings(cfg: Any) -> None:
    """Checks the RLlib settings ``cfg`` changes from its class's defaults (module docstring).

    Reads only.

    Raises:
        SettingError: one line naming the setting (``model_config.<key>`` for a model
            entry), the bad value and what is valid.
    """
    default = _default_of(type(cfg))
    if default is None:
        return
    own = collect(type(cfg))[0]
    # settings that are properties (train_batch_size_per_learner) derive their value from
    # others (train_batch_size, num_learners): those are checked first
    derived = [n for n in _RLLIB if isinstance(getattr(type(cfg), n, None), property)]
    for name in [n for n in _RLLIB if n not in derived] + derived:
        setting = _RLLIB[name]
        if name in own:
            continue
        value = getattr(cfg, name, _MISSING)
        if value is _MISSING or _unchanged(value, getattr(default, name, _MISSING)):
            continue
        setting.check(value, name)
    for name, value in vars(cfg).items():
        if name.startswith("_") or name in own or name in _RLLIB:
            continue
        base = getattr(default, name, _MISSING)
        if base is _MISSING or _unchanged(value, base):
            continue
        err = _kind_problem(name, value, base)
        if err is not None:
            raise err
    _check_model_config(cfg, default)


def _check_model_config(cfg: Any, default: Any) -> None:
    try:
        model = cfg.model_config
    except Exception:  # noqa: BLE001 - the env check reports what is wrong with the env
        return
    if not isinstance(model, dict):
        return
    defaults = _model_defaults(default)
    for key, value in model.items():
        base = defaults.get(key, _MISSING)
        if _unchanged(value, base):
            continue
        where = f"model_config.{key}"
        if key in _MODEL:
            _MODEL[key].check(value, where)
        elif base is not _MISSING:
            err = _kind_problem(where, value, base)
            if err is not None:
                raise err
