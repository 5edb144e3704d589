"""Declared settings: the type, bounds and meaning of every setting, in one place.

Every algorithm config class and every registered environment declares its settings
here-style, as :class:`Setting` objects (type, bounds or choices, whether null is
allowed, a one-line meaning), plus :class:`Rule` objects for what one setting alone
cannot say (a per-group list whose length must match the number of groups, a sample
count that must fit in its store, ...). The same declarations are read by

* the configs' ``validate()`` (:func:`check_object`), which therefore only checks;
* the command line, before Ray starts or anything is written: it calls the config's
  ``validate()`` (:mod:`rllib_fair.cli.config_build`) and checks ``env_config`` entries
  and the rules over them against the env's declarations;
* the generated reference ``docs/settings.md`` (:mod:`rllib_fair.cli.settings_doc`);
* the test that gives every declared setting a bad value and expects a one-line error.

A bad value raises :class:`SettingError` (a ``ValueError``) whose message is one line:
``<key>: <bad value> is invalid; valid: <what is valid>`` (``valid choices: a, b`` for a
choice).

Where the declarations live:

* algorithm configs: class attributes ``DECLARED_SETTINGS`` and ``DECLARED_RULES``
  (collected along the class's bases by :func:`collect`, a subclass's declaration of a
  name replacing its base's), and ``REPORTED_KEYS``, the result keys the algorithm adds;
* environments: the same three class attributes on the env class;
* :data:`RLLIB_SETTINGS`: RLlib settings every config of this package checks in its
  ``validate()`` when set to other than the algorithm's default
  (:mod:`rllib_fair.rllib.rllib_settings`).

This module imports neither ray nor torch (nor numpy).
"""

from __future__ import annotations

import fnmatch
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Tolerance on "probabilities sum to 1".
SUM_ATOL = 1e-6

#: The types a :class:`Setting` can declare.
TYPES = ("int", "float", "bool", "str", "list", "dict", "union", "custom", "any")


class SettingError(ValueError):
    """A declared setting or rule is violated; the message is one line starting with the key.

    Attributes:
        key: the setting (or, for a rule, its first setting) the message names.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def show(value: Any) -> str:
    """One-line ``repr`` of a user value (at most 200 characters)."""
    try:
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
            value = value.tolist()
    except Exception:  # noqa: BLE001 - an unprintable value falls back to repr
        pass
    text = " ".join(repr(value).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _num(x: float) -> str:
    """``1`` for 1.0, ``0.5`` for 0.5, ``1e+15`` for 1e15."""
    if isinstance(x, bool):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:g}"


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not _is_bool(value)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(value)
    except (OverflowError, TypeError):
        return False


def _as_list(value: Any) -> list | None:
    """A list or tuple (or an array, via ``tolist``) as a list; None for anything else."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist") and hasattr(value, "ndim") and getattr(value, "ndim", 0) >= 1:
        return list(value.tolist())
    return None


def _same(value: Any, choice: Any) -> bool:
    """``value`` is ``choice`` (bools only equal bools, numbers equal numbers, strs strs)."""
    if _is_bool(value) or _is_bool(choice):
        return _is_bool(value) and _is_bool(choice) and bool(value) == bool(choice)
    if _is_real(value) and _is_real(choice):
        return value == choice
    return type(value) is type(choice) and value == choice


def is_schedule(value: Any) -> bool:
    """True for an RLlib schedule ``[[0, v0], [t1, v1], ...]``.

    That is at least two ``[timestep, value]`` pairs, integer timesteps from 0,
    non-decreasing, finite values >= 0.
    """
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        return False
    last = -1.0
    for pair in value:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            return False
        t, v = pair
        if not (_is_real(t) and _finite(t) and t >= 0 and float(t).is_integer()) or t < last:
            return False
        if not (_is_real(v) and _finite(v) and v >= 0):
            return False
        last = t
    return value[0][0] == 0


SCHEDULE_TEXT = (
    "a schedule [[0, v0], [t1, v1], ...] of at least two [timestep, value] pairs (integer "
    "timesteps from 0, non-decreasing; finite values >= 0)"
)


@dataclass(frozen=True)
class Setting:
    """One setting: its type, what values are valid and what it means.

    Attributes:
        name: the setting's name (a config attribute or a constructor argument).
        type: one of :data:`TYPES`. ``"float"`` also accepts ints; ``"union"`` accepts
            what any of ``options`` accepts; ``"custom"`` what ``predicate`` accepts.
        meaning: one line for the docs.
        low, high: bounds of a number (of each item, for a list of numbers).
        low_open, high_open: strict bounds (``> low``, ``< high``).
        finite: a ``float`` must be finite (default True).
        choices: valid values (or a function returning them, for registries).
        none: null (None) is valid.
        none_means: what null stands for (for the docs and the error).
        also: further valid literal values (e.g. ``"auto"``).
        item: the declaration every item of a ``list`` must satisfy.
        length: exact length of a ``list``; ``min_length``: its least length.
        sums_to_one: the items of a ``list`` of numbers sum to 1 (within :data:`SUM_ATOL`).
        fields: declarations of a ``dict``'s keys (None: any keys).
        options: the alternatives of a ``union``.
        schedule: an RLlib schedule ``[[t, v], ...]`` is valid too (:func:`is_schedule`).
        predicate: the test of a ``custom`` setting.
        valid: text of what is valid, replacing the generated one.
        python_only: only a Python object can be valid (no YAML value is); documented.
    """

    name: str
    type: str
    meaning: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    finite: bool = True
    choices: tuple | Callable[[], Sequence] | None = None
    none: bool = False
    none_means: str = ""
    also: tuple = ()
    item: Setting | None = None
    length: int | None = None
    min_length: int = 0
    sums_to_one: bool = False
    fields: tuple[Setting, ...] | None = None
    options: tuple[Setting, ...] = ()
    schedule: bool = False
    predicate: Callable[[Any], bool] | None = None
    valid: str | None = None
    python_only: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Setting {self.name!r}: type {self.type!r} is not one of {TYPES}")
        if self.type == "list" and self.item is None:
            raise ValueError(f"Setting {self.name!r}: a list needs an item declaration")
        if self.type == "union" and not self.options:
            raise ValueError(f"Setting {self.name!r}: a union needs options")
        if self.type == "custom" and (self.predicate is None or not self.valid):
            raise ValueError(f"Setting {self.name!r}: a custom setting needs predicate and valid")

    # ------------------------------------------------------------------ checking
    def current_choices(self) -> tuple:
        """The valid choices (calling ``choices`` when it is a function)."""
        if self.choices is None:
            return ()
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def accepts(self, value: Any) -> bool:
        """True if ``value`` is valid."""
        return self.problem(value) is None

    def problem(self, value: Any, key: str | None = None) -> SettingError | None:
        """The error ``value`` gives under key ``key`` (default: the name), else None."""
        key = self.name if key is None else key
        if value is None:
            return None if self.none else self._error(key, value)
        if any(_same(value, a) for a in self.also):
            return None
        if self.schedule and isinstance(value, (list, tuple)):
            return None if is_schedule(value) else self._error(key, value)
        if self.type == "dict" and self.fields is not None and isinstance(value, Mapping):
            return self._dict_problem(key, value)
        if self._accepts_value(value):
            return None
        return self._item_problem(key, value) or self._error(key, value)

    def check(self, value: Any, key: str | None = None) -> None:
        """Raises :class:`SettingError` (one line) unless ``value`` is valid."""
        err = self.problem(value, key)
        if err is not None:
            raise err

    def _accepts_value(self, value: Any) -> bool:
        t = self.type
        if t == "any":
            return True
        if t == "custom":
            try:
                return bool(self.predicate(value))
            except Exception:  # noqa: BLE001 - a predicate that fails rejects the value
                return False
        if t == "union":
            return any(o.accepts(value) for o in self.options)
        if t == "bool":
            return _is_bool(value)
        if t == "int":
            return _is_int(value) and self._in_bounds(value) and self._in_choices(value)
        if t == "float":
            if not _is_real(value) or (self.finite and not _finite(value)):
                return False
            if isinstance(value, float) and math.isnan(value):
                return False
            return self._in_bounds(value) and self._in_choices(value)
        if t == "str":
            return isinstance(value, str) and self._in_choices(value)
        if t == "dict":
            return isinstance(value, Mapping) and all(isinstance(k, str) for k in value)
        if t == "list":
            items = _as_list(value)
            if items is None:
                return False
            if self.length is not None and len(items) != self.length:
                return False
            if len(items) < self.min_length:
                return False
            if not all(self.item.accepts(v) for v in items):
                return False
            return not self.sums_to_one or abs(sum(items) - 1.0) <= SUM_ATOL
        return False  # pragma: no cover - TYPES is checked in __post_init__

    def _in_bounds(self, value: Any) -> bool:
        try:
            if self.low is not None and (value <= self.low if self.low_open else value < self.low):
                return False
            return self.high is None or (
                value < self.high if self.high_open else value <= self.high
            )
        except TypeError:
            return False

    def _in_choices(self, value: Any) -> bool:
        choices = self.current_choices()
        return not choices or any(_same(value, c) for c in choices)

    def _item_problem(self, key: str, value: Any) -> SettingError | None:
        """For a list of the right length: the error of its first bad item, named by index."""
        if self.type != "list":
            return None
        items = _as_list(value)
        if items is None or (self.length is not None and len(items) != self.length):
            return None
        if len(items) < self.min_length:
            return None
        for i, item in enumerate(items):
            err = self.item.problem(item, f"{key}[{i}]")
            if err is not None:
                return err
        return None

    def _dict_problem(self, key: str, value: Mapping) -> SettingError | None:
        known = {f.name: f for f in self.fields or ()}
        for k, v in value.items():
            if k not in known:
                return SettingError(
                    key,
                    f"{key}.{k}: unknown key; valid keys: {', '.join(known)}",
                )
            err = known[k].problem(v, f"{key}.{k}")
            if err is not None:
                return err
        return None

    def _error(self, key: str, value: Any) -> SettingError:
        text = self.valid_text()
        if not text.startswith("choices: "):
            text = "valid: " + text
        else:
            text = "valid " + text
        if self.python_only:
            text += " (set from Python)"
        return SettingError(key, f"{key}: {show(value)} is invalid; {text}")

    # ------------------------------------------------------------------ describing
    def valid_text(self) -> str:
        """What is valid, as the error and the docs say it (``choices: a, b`` for choices)."""
        if self.type == "bool" and self.valid is None:
            words = [str(a) for a in self.also] + ["true", "false"]
            if self.none:
                words.append("null" + (f" ({self.none_means})" if self.none_means else ""))
            return "choices: " + ", ".join(words)
        choices = self.current_choices()
        if (
            self.valid is None
            and choices
            and self.type in ("str", "int", "float")
            and self.low is None
            and self.high is None
        ):
            words = [str(c) for c in choices] + [str(a) for a in self.also]
            if self.none:
                words.append("null" + (f" ({self.none_means})" if self.none_means else ""))
            return "choices: " + ", ".join(words)
        parts = [self.describe()]
        if self.schedule:
            parts.append(SCHEDULE_TEXT)
        parts += [show(a) for a in self.also]
        if self.none:
            parts.append("null" + (f" ({self.none_means})" if self.none_means else ""))
        return ", or ".join(parts) if self.schedule else " or ".join(parts)

    def describe(self, plural: bool = False) -> str:
        """A phrase naming the valid values (``an integer >= 1``; plural: ``integers >= 1``)."""
        if self.valid is not None:
            return self.valid
        t = self.type
        if t == "any":
            return "any value"
        if t == "bool":
            return "true/false values" if plural else "true or false"
        if t == "int":
            return self._number_phrase("integers" if plural else "an integer", integer=True)
        if t == "float":
            noun = "numbers" if plural else "a number"
            return self._number_phrase(noun, integer=False)
        if t == "str":
            choices = self.current_choices()
            if choices:
                return ("strings among " if plural else "one of ") + ", ".join(map(str, choices))
            return "strings" if plural else "a string"
        if t == "dict":
            if self.fields:
                keys = ", ".join(f.name for f in self.fields)
                return f"{'mappings' if plural else 'a mapping'} with keys among {keys}"
            return "mappings" if plural else "a mapping"
        if t == "list":
            size = ""
            if self.length is not None:
                size = f"{self.length} "
            elif self.min_length:
                size = f"at least {self.min_length} "
            head = "lists of " if plural else "a list of "
            text = head + size + self.item.describe(plural=True)
            if self.sums_to_one:
                text += " summing to 1"
            return text
        if t == "union":
            return " or ".join(o.describe(plural) for o in self.options)
        return self.valid or ""  # pragma: no cover - custom always has valid

    def _number_phrase(self, noun: str, *, integer: bool) -> str:
        low, high = self.low, self.high
        plural = noun in ("integers", "numbers")
        choices = self.current_choices()
        if choices:
            return f"{noun} among {', '.join(_num(c) for c in choices)}"
        if low is not None and high is not None:
            lb = "(" if self.low_open else "["
            rb = ")" if self.high_open else "]"
            return f"{noun} in {lb}{_num(low)}, {_num(high)}{rb}"
        if not integer and self.finite:
            noun = "finite numbers" if plural else "a finite number"
        if low is not None:
            return f"{noun} {'>' if self.low_open else '>='} {_num(low)}"
        if high is not None:
            return f"{noun} {'<' if self.high_open else '<='} {_num(high)}"
        return noun

    def type_text(self) -> str:
        """The type as the docs show it (``int``, ``list[float]``, ``str | null``...)."""
        t = self.type
        if t == "list":
            text = f"list[{self.item.type_text()}]"
        elif t == "union":
            text = " | ".join(o.type_text() for o in self.options)
        elif t == "custom":
            text = "object"
        else:
            text = t
        if self.also:
            text += " | " + " | ".join(show(a) for a in self.also)
        if self.schedule:
            text += " | schedule"
        if self.none:
            text += " | null"
        return text

    # ------------------------------------------------------------------ bad values
    def invalid_examples(self) -> list:
        """Values this setting rejects: out of range first, then of a wrong type.

        Used by the test that gives every declared setting a bad value. Empty only for
        a setting that accepts anything (type ``any``).
        """
        out = []
        for value in self._candidates():
            if not self.accepts(value) and not any(_same_example(value, o) for o in out):
                out.append(value)
        return out

    def _candidates(self) -> list:
        t = self.type
        cands: list = []
        if t in ("int", "float"):
            step = 1 if t == "int" else 0.5
            if self.low is not None:
                cands.append(_round(self.low if self.low_open else self.low - step, t))
            if self.high is not None:
                cands.append(_round(self.high if self.high_open else self.high + step, t))
            if t == "int":
                cands.append(1.5)
            cands.append("x")
            cands.append(True)
        elif t == "bool":
            cands += ["yes", 1]
        elif t == "str":
            cands += ["no-such-choice", 5]
        elif t == "list":
            bad_items = self.item.invalid_examples()
            if bad_items:
                cands.append([bad_items[0]] * max(1, self.length or self.min_length or 1))
            if self.length is not None or self.min_length:
                cands.append([])
            cands += ["x", 5]
        elif t == "dict":
            cands += ["x", 5]
            if self.fields is not None:
                cands.append({"no_such_key": 1})
        elif t == "union":
            for o in self.options:
                cands += o._candidates()
            cands += ["no-such-choice", 5, {}]
        elif t == "custom":
            cands += [5, "x", [1]]
        if not self.none:
            cands.append(None)
        return cands


def _round(value: float, t: str) -> float:
    return int(value) if t == "int" else value


def _same_example(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Rule:
    """A rule over several settings (or one setting and a constant such as a group count).

    Attributes:
        name: short name for the docs.
        keys: the settings it reads; the first is the one its error names.
        meaning: one line for the docs.
        check: ``check(values)`` returns the one-line error message, or None when the
            rule holds; ``values`` maps each setting's name to its value (defaults
            included). It only runs once every setting passed its own declaration.
        example: settings (over the defaults) that break the rule, for the tests.
    """

    name: str
    keys: tuple[str, ...]
    meaning: str
    check: Callable[[Mapping[str, Any]], str | None]
    example: Mapping[str, Any]

    def apply(self, values: Mapping[str, Any]) -> None:
        """Raises :class:`SettingError` naming ``keys[0]`` if the rule is broken."""
        message = self.check(values)
        if message is not None:
            raise SettingError(self.keys[0], message)


# ----------------------------------------------------------------------- collecting


def collect(cls: type) -> tuple[dict[str, Setting], tuple[Rule, ...]]:
    """The declared settings and rules of ``cls``, from its bases down to itself.

    A class's ``DECLARED_SETTINGS`` entry replaces a base's of the same name; rules are
    added in the same order (a rule of the same name replaces the base's).
    """
    settings: dict[str, Setting] = {}
    rules: dict[str, Rule] = {}
    for klass in reversed(cls.__mro__):
        for s in vars(klass).get("DECLARED_SETTINGS", ()):
            settings[s.name] = s
        for r in vars(klass).get("DECLARED_RULES", ()):
            rules[r.name] = r
    return settings, tuple(rules.values())


def own_settings(cls: type) -> tuple[Setting, ...]:
    """The settings ``cls`` itself declares (not its bases)."""
    return tuple(vars(cls).get("DECLARED_SETTINGS", ()))


def reported_keys(*classes: type) -> tuple[str, ...]:
    """``REPORTED_KEYS`` patterns of the classes and all their bases, in order, no repeats."""
    out: list[str] = []
    for cls in classes:
        for klass in reversed(cls.__mro__):
            for key in vars(klass).get("REPORTED_KEYS", ()):
                if key not in out:
                    out.append(key)
    return tuple(out)


class _AttributeView(Mapping):
    """An object's attributes as a read-only mapping (what a rule reads)."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self._obj, key)
        except AttributeError:
            raise KeyError(key) from None

    def __iter__(self):
        return iter(vars(self._obj))

    def __len__(self) -> int:
        return len(vars(self._obj))


def check_object(obj: Any) -> None:
    """Checks every setting and rule ``type(obj)`` declares against ``obj``'s attributes.

    Reads only (nothing is converted or filled in).

    Raises:
        SettingError: one line for the first violation.
    """
    settings, rules = collect(type(obj))
    for name, setting in settings.items():
        setting.check(getattr(obj, name, None), name)
    view = _AttributeView(obj)
    for rule in rules:
        rule.apply(view)


def check_values(
    settings: Mapping[str, Setting],
    rules: Sequence[Rule],
    given: Mapping[str, Any],
    defaults: Mapping[str, Any],
    *,
    prefix: str = "",
    owner: str = "",
) -> None:
    """Checks ``given`` (name -> value) against declarations, then the rules.

    Unknown names are errors (with the closest declared names). Rules see ``defaults``
    updated with ``given``.

    Raises:
        SettingError: one line whose key carries ``prefix`` (e.g. ``env_config.``).
    """
    import difflib

    for name, value in given.items():
        if name not in settings:
            close = difflib.get_close_matches(str(name), list(settings), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SettingError(
                f"{prefix}{name}",
                f"{prefix}{name}: unknown setting{f' of {owner}' if owner else ''}; valid: "
                f"{', '.join(settings)}{hint}",
            )
        settings[name].check(value, f"{prefix}{name}")
    values = {**defaults, **given}
    for rule in rules:
        message = rule.check(values)
        if message is not None:
            raise SettingError(f"{prefix}{rule.keys[0]}", f"{prefix}{message}")


def matches(key: str, patterns: Sequence[str]) -> bool:
    """True if ``key`` matches one of the glob ``patterns`` (``*`` within one level)."""
    parts = key.split("/")
    for pattern in patterns:
        pp = pattern.split("/")
        if pp and pp[-1] == "**":
            if len(parts) >= len(pp) and all(
                fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pp[:-1])
            ):
                return True
            continue
        if len(pp) == len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pp)):
            return True
    return False


# ----------------------------------------------------------------------- shared


def bool_setting(name: str, meaning: str) -> Setting:
    """A true/false setting."""
    return Setting(name, "bool", meaning)


def choice(name: str, choices, meaning: str, **kw) -> Setting:
    """A string setting with fixed choices."""
    return Setting(name, "str", meaning, choices=choices, **kw)


def number(name: str, meaning: str, low=None, high=None, **kw) -> Setting:
    """A finite number (ints accepted) within bounds."""
    return Setting(name, "float", meaning, low=low, high=high, **kw)


def integer(name: str, meaning: str, low=None, high=None, **kw) -> Setting:
    """An integer (bools rejected) within bounds."""
    return Setting(name, "int", meaning, low=low, high=high, **kw)


def probabilities(name: str, meaning: str, length: int | None = None, **kw) -> Setting:
    """A list of probabilities summing to 1 (``length`` of them when given)."""
    return Setting(
        name,
        "list",
        meaning,
        item=number("", "", 0, 1),
        length=length,
        min_length=kw.pop("min_length", 0),
        sums_to_one=True,
        **kw,
    )


#: RLlib settings every config of this package checks (attribute names; the YAML keys
#: ``lambda`` and ``framework`` map to ``lambda_`` and ``framework_str``) where a value
#: differs from the algorithm's default (:mod:`rllib_fair.rllib.rllib_settings`).
RLLIB_SETTINGS: tuple[Setting, ...] = (
    number("lr", "learning rate", 0, low_open=True, schedule=True),
    number("entropy_coeff", "weight of the entropy bonus", 0, schedule=True),
    number("gamma", "discount factor", 0, 1),
    number("lambda_", "GAE lambda (YAML key: lambda)", 0, 1),
    number("clip_param", "PPO's clipping range of the probability ratio", 0, low_open=True),
    number(
        "vf_clip_param",
        "RLlib clamps each squared value error at this (no gradient beyond it; PPO's "
        "default 10 stalls the value net when returns are in the hundreds or more): inf "
        "for no clipping",
        0,
        low_open=True,
        finite=False,
    ),
    number("vf_loss_coeff", "weight of the value loss", 0),
    number("kl_coeff", "initial weight of the KL penalty", 0),
    number("kl_target", "target KL divergence of the adaptive KL penalty", 0, low_open=True),
    number(
        "grad_clip",
        "gradient clipping threshold",
        0,
        low_open=True,
        none=True,
        none_means="no clipping",
    ),
    integer(
        "train_batch_size_per_learner",
        "env steps per update and learner",
        1,
        none=True,
        none_means="train_batch_size / num_learners",
    ),
    integer("train_batch_size", "env steps per update (old name)", 1),
    integer("minibatch_size", "env steps per minibatch", 1),
    integer("num_epochs", "passes over the train batch per update", 1),
    integer("num_env_runners", "remote env runners (0: sample in the driver's process)", 0),
    integer("num_envs_per_env_runner", "env copies stepped together by each env runner", 1),
    integer("num_learners", "remote learners (0: learn in the driver's process)", 0),
    integer(
        "rollout_fragment_length",
        "env steps per sample chunk of each env",
        1,
        also=("auto",),
    ),
    integer("seed", "random seed", 0, none=True, none_means="unseeded"),
    integer("evaluation_duration", "evaluation length per round", 1, also=("auto",)),
    integer("evaluation_num_env_runners", "env runners for evaluation", 0),
    integer(
        "evaluation_interval",
        "iterations between evaluations",
        0,
        none=True,
        none_means="no evaluation",
    ),
    choice(
        "batch_mode",
        ("truncate_episodes", "complete_episodes"),
        "whether sample chunks may cut episodes",
    ),
    choice("framework_str", ("torch",), "deep-learning framework (YAML key: framework)"),
    number("num_cpus_per_env_runner", "CPUs reserved per env runner", 0),
    number("num_gpus_per_learner", "GPUs reserved per learner", 0),
)

#: Result keys every algorithm on RLlib's new API stack reports (glob patterns; ``*``
#: stands for one level: a module id, an agent id, a timer name).
RLLIB_REPORTED_KEYS: tuple[str, ...] = (
    "training_iteration",
    "num_env_steps_sampled_lifetime",
    "time_total_s",
    "env_runners/episode_return_mean",
    "env_runners/episode_return_min",
    "env_runners/episode_return_max",
    "env_runners/episode_len_mean",
    "env_runners/episode_len_min",
    "env_runners/episode_len_max",
    "env_runners/episode_duration_sec_mean",
    "env_runners/num_episodes",
    "env_runners/num_episodes_lifetime",
    "env_runners/num_env_steps_sampled",
    "env_runners/num_env_steps_sampled_lifetime",
    "env_runners/num_env_steps_sampled_lifetime_throughput/*",
    "env_runners/agent_episode_return_mean/*",
    "env_runners/module_episode_return_mean/*",
    "env_runners/num_agent_steps_sampled/*",
    "env_runners/num_agent_steps_sampled_lifetime/*",
    "env_runners/num_module_steps_sampled/*",
    "env_runners/num_module_steps_sampled_lifetime/*",
    "env_runners/env_reset_timer",
    "env_runners/env_step_timer",
    "env_runners/rlmodule_inference_timer",
    "env_runners/sample",
    "env_runners/time_between_sampling",
    "env_runners/weights_seq_no",
    "env_runners/num_env_step_failures",
    "env_runners/env_runner_state_server_pull",
    "env_runners/env_to_module_connector/**",
    "env_runners/module_to_env_connector/**",
    "env_runners/env_to_module_sum_episodes_length_in",
    "env_runners/env_to_module_sum_episodes_length_out",
    "perf/cpu_util_percent",
    "perf/ram_util_percent",
    "perf/gpu_util_percent*",
    "perf/vram_util_percent*",
)

#: Result keys of every algorithm whose learners train (RLlib's ``Learner``).
LEARNER_REPORTED_KEYS: tuple[str, ...] = (
    "learners/__all_modules__/num_env_steps_trained",
    "learners/__all_modules__/num_env_steps_trained_lifetime",
    "learners/__all_modules__/num_env_steps_trained_lifetime_throughput/*",
    "learners/__all_modules__/num_env_steps_trained_throughput",
    "learners/__all_modules__/num_module_steps_trained",
    "learners/__all_modules__/num_module_steps_trained_lifetime",
    "learners/__all_modules__/num_module_steps_trained_lifetime_throughput/*",
    "learners/__all_modules__/num_module_steps_trained_throughput",
    "learners/__all_modules__/num_trainable_parameters",
    "learners/__all_modules__/num_non_trainable_parameters",
    "learners/__all_modules__/learner_connector/**",
    "learners/__all_modules__/learner_connector_sum_episodes_length_in",
    "learners/__all_modules__/learner_connector_sum_episodes_length_out",
    "learners/*/module_train_batch_size_mean",
    "learners/*/num_module_steps_trained",
    "learners/*/num_module_steps_trained_lifetime",
    "learners/*/num_module_steps_trained_lifetime_throughput/*",
    "learners/*/num_trainable_parameters",
    "learners/*/weights_seq_no",
    "learners/*/total_loss",
    "learners/*/*_learning_rate",
    "learners/*/gradients_*_global_norm",
)
