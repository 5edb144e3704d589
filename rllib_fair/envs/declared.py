"""Pieces the environments' setting declarations share (:mod:`rllib_fair.settings`).

Each environment class declares its constructor arguments in ``DECLARED_SETTINGS`` and
what one argument alone cannot say (a per-group table whose bins must match another's, at
least one observation part switched on, ...) in ``DECLARED_RULES``. The command line
checks an ``env_config`` against them before the env is built; the env constructors keep
their own checks for Python callers. :func:`env_declarations` gives an env id's
settings, rules and constructor defaults.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from rllib_fair.envs.base import MAX_MAGNITUDE
from rllib_fair.settings import Rule, Setting, collect, integer, number, probabilities, show

# ----------------------------------------------------------------------- settings


def amount(name: str, meaning: str, *, zero: bool = False) -> Setting:
    """A real amount in ``(0, MAX_MAGNITUDE]`` (``[0, MAX_MAGNITUDE]`` with ``zero``)."""
    return number(name, meaning, 0, MAX_MAGNITUDE, low_open=not zero)


def max_steps(meaning: str = "episode length in steps") -> Setting:
    """``max_steps``: an integer >= 1."""
    return integer("max_steps", meaning, 1)


def probability_rows(name: str, meaning: str, rows: int, **kw) -> Setting:
    """``rows`` probability vectors (each summing to 1, at least two entries each)."""
    return Setting(
        name, "list", meaning, item=probabilities("", "", min_length=2), length=rows, **kw
    )


def probability_table(name: str, meaning: str, rows: int, **kw) -> Setting:
    """One list of probabilities for all rows, or ``rows`` lists (entries in [0, 1])."""
    row = Setting("", "list", item=number("", "", 0, 1), min_length=2)
    return Setting(
        name,
        "union",
        meaning,
        options=(row, Setting("", "list", item=row, length=rows)),
        **kw,
    )


# ----------------------------------------------------------------------- rules


def at_least_one(*flags: str) -> Rule:
    """At least one of the observation-part flags is on."""
    names = ", ".join(flags)
    return Rule(
        "observation_not_empty",
        flags,
        f"at least one of {names} stays true (the observation would be empty)",
        lambda v: (
            None
            if any(v[f] for f in flags)
            else f"{flags[0]}: False is invalid while {' and '.join(flags[1:])} are false too; "
            "valid: at least one observation part true"
        ),
        dict.fromkeys(flags, False),
    )


def _rows(value: Any) -> list | None:
    """The rows of a nested list (None for a flat list or None)."""
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)):
        return list(value)
    return None


def bins_of(cluster_probs: Any) -> int | None:
    """The bin count of a cluster table (rows of one length), else None."""
    rows = _rows(cluster_probs)
    if not rows:
        return None
    lengths = {len(r) for r in rows}
    return lengths.pop() if len(lengths) == 1 else None


def same_bins(
    cluster: str = "cluster_probs", success: str = "success_probs", default_bins=None
) -> tuple[Rule, Rule]:
    """Rules: the cluster table's rows have one length; the success table matches it.

    ``default_bins`` gives the bin count when ``cluster`` is None (a table the env loads).
    """

    def rows_equal(v: Mapping) -> str | None:
        rows = _rows(v[cluster])
        if rows is None or bins_of(rows) is not None:
            return None
        return (
            f"{cluster}: {show(v[cluster])} is invalid (rows of lengths "
            f"{[len(r) for r in rows]}); valid: every group over the same bins (rows of one "
            "length)"
        )

    def success_matches(v: Mapping) -> str | None:
        bins = bins_of(v[cluster]) if v[cluster] is not None else default_bins
        sp = v[success]
        if bins is None or sp is None:
            return None
        rows = _rows(sp) or [sp]
        bad = [len(r) for r in rows if len(r) != bins]
        if not bad:
            return None
        return (
            f"{success}: {show(sp)} is invalid ({[len(r) for r in rows]} entries per row); "
            f"valid: {bins} probabilities per row, one per bin of {cluster}"
        )

    return (
        Rule(
            "cluster_rows_equal",
            (cluster,),
            f"the rows of {cluster} have one length (the bins)",
            rows_equal,
            {cluster: [[0.5, 0.5], [0.2, 0.3, 0.5]]},
        ),
        Rule(
            "success_bins_match",
            (success, cluster),
            f"{success} has one probability per bin of {cluster}",
            success_matches,
            {success: [0.5, 0.5, 0.5]}
            if default_bins is None
            else {success: [[0.5] * (default_bins + 1)] * 2},
        ),
    )


# ----------------------------------------------------------------------- look-up


def constructor_defaults(cls: type) -> dict[str, Any]:
    """Default of every keyword argument of ``cls``'s constructor, along its bases.

    A subclass whose ``__init__`` passes ``**kwargs`` on contributes its own defaults;
    the rest come from its bases.
    """
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or klass is object:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in params:
            if p.default is not inspect.Parameter.empty and p.name not in out:
                out[p.name] = p.default
    return out


def env_declarations(env_id: str) -> tuple[dict[str, Setting], tuple[Rule, ...], dict]:
    """Declared settings, rules and constructor defaults of a registered env id.

    Raises:
        ValueError: for an id this package does not register.
    """
    from rllib_fair.envs import env_class

    cls = env_class(env_id)
    settings, rules = collect(cls)
    return settings, rules, constructor_defaults(cls)


#: What :func:`declared_value` returns for an argument with no value and no default.
NO_VALUE = object()


def declared_value(env: Any, env_config: Mapping | None, name: str) -> Any:
    """The value constructor argument ``name`` takes for ``env`` built with ``env_config``.

    Read without building anything: the ``env_config`` entry, else the registered
    gymnasium spec's keyword arguments, else the constructor's default
    (:func:`constructor_defaults`). ``env`` as in :func:`rllib_fair.envs.env_class_of`.
    The value is as given, not checked (the constructor checks it when the env is built).

    Returns:
        The value, or :data:`NO_VALUE` where the class cannot be resolved or names no
        such argument.
    """
    import gymnasium

    from rllib_fair.envs import env_class_of

    config = dict(env_config or {})
    if name in config:
        return config[name]
    if isinstance(env, str):
        spec = gymnasium.registry.get(env.split(":", 1)[1] if ":" in env else env)
        if spec is not None and name in (spec.kwargs or {}):
            return spec.kwargs[name]
    cls = env_class_of(env)
    if cls is None:
        return NO_VALUE
    return constructor_defaults(cls).get(name, NO_VALUE)
