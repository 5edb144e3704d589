"""What a cell's built config resolves the package's own defaults to.

A cell's setup (:meth:`~rllib_fair.reproduce.plan.Plan.setup`) records what the plan and
the tuned example set. A cell also runs on what neither sets: the defaults of the
package's algorithm config classes and of its environments. :func:`resolved_settings`
records those values as the built config holds them:

* ``config``: every setting the algorithm's config class declares
  (``DECLARED_SETTINGS`` along its bases), and every RLlib setting whose default the
  package's classes change (a config class's ``__init__`` setting ``kl_coeff`` or
  ``tau``; found by comparing a default instance of the class with one of the RLlib
  class it extends: :func:`package_keys`);
* ``env``: the environment's constructor parameters, its defaults updated with the
  cell's ``env_config``.

RLlib's own defaults are not included (the cell's ``provenance`` names the Ray version),
nor resources, the seed or values that are not plain data (classes, functions). The
runner writes the record into each cell's row (``resolved``); a row whose record differs
from what the current code resolves the cell to is stale
(:func:`rllib_fair.reproduce.merge.current`).
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from typing import Any

#: Settings that place or size a run, not what it learns; never part of the record.
RESOURCE_KEYS = frozenset(
    {
        "seed",
        "num_env_runners",
        "num_learners",
        "num_cpus_per_env_runner",
        "num_gpus_per_env_runner",
        "num_cpus_per_learner",
        "num_gpus_per_learner",
        "num_cpus_for_main_process",
        "num_gpus",
        "placement_strategy",
        "evaluation_num_env_runners",
    }
)

_MISSING = object()


def _plain(value: Any) -> Any:
    """``value`` in JSON types, or ``_MISSING`` when it is not plain data."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _MISSING if any(v is _MISSING for v in items) else items
    if isinstance(value, dict):
        items = {str(k): _plain(v) for k, v in value.items()}
        return _MISSING if any(v is _MISSING for v in items.values()) else items
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        return _plain(value.item())  # a numpy scalar
    return _MISSING


def _rllib_base(cls: type) -> type | None:
    """The first RLlib class in ``cls``'s bases (itself included), or None."""
    return next((k for k in cls.__mro__ if k.__module__.startswith("ray.rllib.")), None)


@functools.cache
def package_keys(cls: type) -> tuple[str, ...]:
    """The settings the package decides for config class ``cls``, sorted.

    Its declared settings, and the RLlib settings whose value in a default ``cls()``
    differs from that in a default instance of the RLlib class it extends.
    """
    from rllib_fair.settings import collect

    keys = set(collect(cls)[0])
    base = _rllib_base(cls)
    if base is not None and base is not cls:
        ours, theirs = _attributes(cls()), _attributes(base())
        keys |= {k for k, v in ours.items() if k in theirs and theirs[k] != v}
    return tuple(sorted(keys - RESOURCE_KEYS))


def _attributes(config) -> dict[str, Any]:
    """A config's public attributes in JSON types (what is not plain data left out)."""
    out = {}
    for key, value in vars(config).items():
        if key.startswith("_"):
            continue
        plain = _plain(value)
        if plain is not _MISSING:
            out[key] = plain
    return out


def env_parameters(env: Any, env_config: dict | None) -> dict[str, Any]:
    """The env's constructor defaults (plain ones) updated with ``env_config``.

    ``env`` as RLlib's ``config.env`` (a registered id or a class); an env whose class
    cannot be found gives ``env_config`` alone.
    """
    from rllib_fair.envs import env_class_of

    out: dict[str, Any] = {}
    cls = env_class_of(env)
    if cls is not None:
        try:
            params = inspect.signature(cls.__init__).parameters.values()
        except (TypeError, ValueError):
            params = ()
        for p in params:
            if p.name == "self" or p.default is inspect.Parameter.empty:
                continue
            plain = _plain(p.default)
            if plain is not _MISSING:
                out[p.name] = plain
    for key, value in (env_config or {}).items():
        plain = _plain(value)
        out[str(key)] = plain if plain is not _MISSING else repr(value)
    return out


def added_settings(config_cls: type) -> dict[str, Any]:
    """``{key: former}`` of the settings a config class (or a base) added after release.

    A config class lists them in ``ADDED_SETTINGS``; ``former(recorded_config)`` returns
    the value of the new setting that reproduces what a run recorded before the setting
    existed did, given the rest of that run's record.
    """
    added: dict[str, Any] = {}
    for cls in reversed(config_cls.__mro__):
        added.update(vars(cls).get("ADDED_SETTINGS", {}))
    return added


def upgraded(recorded: dict | None, config_cls: type | None) -> dict | None:
    """``recorded`` with the settings added since it was written (:func:`added_settings`).

    Each missing setting takes the value that reproduces the recorded run, so a record
    that ran as a current default still does compares equal to today's, and one that ran
    otherwise does not (it is then stale).
    """
    if not recorded or config_cls is None or "config" not in recorded:
        return recorded
    missing = {k: f for k, f in added_settings(config_cls).items() if k not in recorded["config"]}
    if not missing:
        return recorded
    config = dict(recorded["config"])
    for key, former in missing.items():
        config[key] = former(recorded["config"])
    return {**recorded, "config": config}


def resolved_settings(config) -> dict[str, Any]:
    """The record of a built algorithm config (see the module docstring), in JSON types."""
    attrs = _attributes(config)
    record = {
        "config": {k: attrs[k] for k in package_keys(type(config)) if k in attrs},
        "env": env_parameters(config.env, dict(config.env_config or {})),
    }
    return json.loads(json.dumps(record, sort_keys=True))
