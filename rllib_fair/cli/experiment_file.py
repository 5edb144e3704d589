"""The experiment file as data: a YAML safe loader, command-line overrides, names.

File format (RLlib's classic tuned-example layout, one or more experiments)::

    <experiment name>:
      run: PPO                      # a name from `rllib-fair algos`
      env: fair/Lending-v0          # a registered gymnasium id (`rllib-fair envs`)
      env_config: {max_steps: 2000} # constructor kwargs of the env (optional)
      stop: {num_env_steps_sampled_lifetime: 40000}
      config: {lr: 0.0003, fairness_notion: equal_opportunity, ...}
      pass_criteria:                # optional; checked by --as-test
        num_env_steps_sampled_lifetime: {min: 32000}  # the budget entry: 80-100% of stop
        env_runners/episode_return_mean: {min: 100}
        fairness/equal_opportunity/bias: {max: 0.5}
      checkpoint_config: {checkpoint_at_end: true}
      num_samples: 1
      storage_path: results         # optional; --storage-path overrides

Trust model: the file is data. The loader is a YAML safe loader that also rejects
explicit tags (``!!python/...`` and every other ``!tag``) and duplicate keys, and bounds
the number of values aliases can expand to. What each section means and how it is
checked is :mod:`rllib_fair.cli.experiment`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rllib_fair.cli.result_keys import ExperimentError, first_line

TOP_LEVEL_KEYS = (
    "run",
    "env",
    "env_config",
    "stop",
    "config",
    "pass_criteria",
    "checkpoint_config",
    "num_samples",
    "storage_path",
    "local_dir",
    "selection",
    "seeds",
    "tune",
)
"""The keys an experiment spec may have (each section is checked by ``experiment``)."""


class _DataOnlyError(yaml.YAMLError):
    """A YAML construct a data file may not use (a duplicate key, an explicit tag)."""

    def __init__(self, problem: str, mark) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _Loader(yaml.SafeLoader):
    """SafeLoader for data files: floats like ``5e-5``, no duplicate keys, no tags.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent, so
    ``lr: 5e-5`` or ``{min: 1e9}`` would silently become strings; the YAML 1.2 form is
    added here. A mapping that repeats a key (a second ``config:`` block, two
    experiments with one name) would silently keep the last value; it is an error.
    Explicit tags (``!!python/object``, ``!!binary``, ``!custom``...) are errors too:
    a data file has no use for them.
    """

    def compose_node(self, parent, index):
        """Rejects explicit tags before composing a node."""
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if tag is not None and not isinstance(event, yaml.AliasEvent) and tag != "!":
            raise _DataOnlyError(
                f"tag {tag!r} is not allowed (the file is data: plain values, lists and "
                "mappings only)",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        """Rejects a key that appears twice in one mapping (merge keys ``<<`` aside)."""
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # SafeLoader reports unhashable keys itself
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise _DataOnlyError(
                        f"duplicate key {key!r} (first at line {first_line[key]}); valid: "
                        "each key once per mapping",
                        key_node.start_mark,
                    )
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def parse_value(text: str) -> Any:
    """Parses a ``--config key=value`` right-hand side as YAML (numbers, lists, ...)."""
    try:
        value = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        _check_expansion(value)
    except (yaml.YAMLError, RecursionError):
        return text
    return value


def parse_overrides(items: list[str] | None, flag: str) -> dict[str, Any]:
    """Turns ``["a=1", "b=x"]`` into ``{"a": 1, "b": "x"}``."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ExperimentError(f"{flag}: {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def load_experiments(path: str | Path) -> dict[str, dict]:
    """Reads a tuned-example YAML file into ``{name: spec}``."""
    path = Path(path)
    if not path.is_file():
        raise ExperimentError(f"FILE: {str(path)!r} does not exist or is not a file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ExperimentError(f"FILE: {str(path)!r} cannot be read: {first_line(e)}") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        _check_expansion(data)
    except RecursionError:
        raise ExperimentError(
            f"FILE: {str(path)!r} is nested too deeply; valid: ordinary nesting depths"
        ) from None
    except _DataOnlyError as e:
        mark = e.problem_mark
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ExperimentError(f"FILE: {str(path)!r}{where}: {e.problem}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ExperimentError(f"FILE: {str(path)!r} is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict) or not data:
        raise ExperimentError(
            f"FILE: {str(path)!r} must map experiment names to specs "
            "({name: {run, env, stop, config, ...}}), got "
            f"{type(data).__name__}"
        )
    for name, spec in data.items():
        check_experiment_name(name)
        if not isinstance(spec, dict):
            raise ExperimentError(
                f"{name}: experiment spec must be a mapping with keys "
                f"{', '.join(TOP_LEVEL_KEYS)}; got {type(spec).__name__}"
            )
    return data


#: Most values (scalars, lists and mappings, counted with every alias expanded) a file
#: may hold; YAML aliases can otherwise describe exponentially large data in a few lines.
MAX_VALUES = 100_000


def _check_expansion(data: Any) -> None:
    """Rejects recursive data (an alias inside its own anchor) and alias bombs."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _DataOnlyError("an alias refers to its own anchor (recursive data)", None)
        active.add(key)
        children = list(value.items()) if isinstance(value, dict) else value
        total = 1
        for child in children:
            total += size(child[1]) + 1 if isinstance(value, dict) else size(child)
            if total > MAX_VALUES:
                raise _DataOnlyError(
                    f"holds more than {MAX_VALUES:,} values once aliases are expanded", None
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(data)


def check_experiment_name(name: Any) -> None:
    """The name becomes a folder under the storage path: a plain, non-empty name."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or name in (".", "..")
        or any(c in name for c in "/\\\0")
    ):
        raise ExperimentError(
            f"FILE: experiment name {name!r} is invalid; valid: a non-empty string without "
            "'/' or '\\' (it names the results folder), other than '.' and '..'"
        )
