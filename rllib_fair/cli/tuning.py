"""Search spaces, seeds, schedulers and search algorithms in tuned-example YAML.

A config value may be a sampled space (one key, Tune's function of the same name)::

    lr: {loguniform: [0.0001, 0.01]}       # ray.tune.loguniform(a, b), 0 < a < b
    beta_1: {uniform: [0.1, 1.0]}          # ray.tune.uniform(a, b), a < b
    num_epochs: {randint: [2, 6]}          # ray.tune.randint(a, b): integers a..b-1
    clip_param: {quniform: [0.1, 0.3, 0.05]}  # ray.tune.quniform(a, b, q), q > 0
    advantage_normalization: {choice: [minmax, standard]}  # ray.tune.choice([...])

Every bound (and every choice) is validated like a plain value of that key, and the
space's own shape is checked (two numbers with a < b, positive bounds for loguniform,
integer bounds for randint, a non-empty list for choice). ``num_samples`` draws that
many configurations.

``seeds: [0, 1, 2]`` (or a count, ``seeds: 3`` = seeds 0, 1, 2) runs every configuration
on every seed: a grid over ``seed``; sampled values are drawn once per configuration and
kept for all its seeds (Tune's ``constant_grid_search``); with a search algorithm each
suggestion is repeated on every seed and the algorithm sees the mean over seeds.

A ``tune:`` block adds a trial scheduler and/or a search algorithm::

    tune:
      scheduler: {type: asha, metric: env_runners/episode_return_mean, mode: max,
                  grace_period: 1, max_t: 10, reduction_factor: 2}
      search_alg: {type: optuna, metric: [env_runners/episode_return_mean,
                   fairness/equal_opportunity/bias], mode: [max, min]}
      max_concurrent_trials: 2

Schedulers: ``asha``, ``median_stopping`` and ``pbt`` (population based training; its
``hyperparam_mutations`` maps config keys to lists of values: a perturbation moves to a
neighbouring value, a resample draws from the list; continuous spaces are not accepted
there because Tune perturbs them by a factor without bounds). Search algorithms
(``pip install 'rllib-fair[tune]'``): ``optuna``, single- or multi-objective, and
``hyperopt`` (TPE), single-objective.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPACE_TYPES = ("uniform", "loguniform", "choice", "randint", "quniform")
TUNE_KEYS = ("scheduler", "search_alg", "max_concurrent_trials")
MODES = ("min", "max")
TIME_ATTRS = ("training_iteration", "num_env_steps_sampled_lifetime", "time_total_s")
MAX_SEEDS = 1000


class TuneError(ValueError):
    """A bad space, seeds or tune block; the message is one line."""


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


@dataclass
class Space:
    """A sampled search space of one config key."""

    kind: str
    args: list

    def probes(self) -> list:
        """The values validated like plain values: both bounds, or every choice."""
        if self.kind == "choice":
            return list(self.args)
        low, high = self.args[0], self.args[1]
        if self.kind == "randint":
            return [low, high - 1]  # Tune's upper bound is exclusive
        return [float(low), float(high)]  # Tune samples floats

    def to_tune(self):
        """The Ray Tune domain (``tune.uniform(...)`` and so on)."""
        from ray import tune

        if self.kind == "choice":
            return tune.choice(list(self.args))
        return getattr(tune, self.kind)(*self.args)

    def describe(self) -> str:
        """The YAML form, e.g. ``{uniform: [0.1, 1.0]}``."""
        return f"{{{self.kind}: {self.args!r}}}"


def is_space(value: Any) -> bool:
    """True for a one-key mapping whose key is one of :data:`SPACE_TYPES`."""
    return isinstance(value, dict) and len(value) >= 1 and any(k in SPACE_TYPES for k in value)


def parse_space(where: str, value: dict) -> Space:
    """Checks the shape of a space mapping; raises TuneError with one line."""
    if len(value) != 1:
        raise TuneError(
            f"{where}: {value!r} is invalid; valid: one key, one of {', '.join(SPACE_TYPES)}"
        )
    ((kind, args),) = value.items()
    at = f"{where}.{kind}"
    if kind == "choice":
        if not isinstance(args, list) or not args:
            raise TuneError(f"{at}: {args!r} is invalid; valid: a non-empty list of values")
        return Space(kind, list(args))
    n = 3 if kind == "quniform" else 2
    shape = "[low, high, q]" if n == 3 else "[low, high]"
    if not isinstance(args, list) or len(args) != n or not all(_is_num(a) for a in args):
        raise TuneError(f"{at}: {args!r} is invalid; valid: {shape}, finite numbers")
    low, high = args[0], args[1]
    if not low < high:
        raise TuneError(f"{at}: {args!r} is invalid; valid: {shape} with low < high")
    if kind == "loguniform" and low <= 0:
        raise TuneError(f"{at}: {args!r} is invalid; valid: {shape} with 0 < low < high")
    if kind == "randint" and not (_is_int(low) and _is_int(high)):
        raise TuneError(f"{at}: {args!r} is invalid; valid: {shape} integers (high is exclusive)")
    if kind == "quniform" and not args[2] > 0:
        raise TuneError(f"{at}: {args!r} is invalid; valid: {shape} with q > 0")
    return Space(kind, list(args))


def split_spaces(config: dict) -> tuple[dict, dict[str, Space]]:
    """Separates sampled spaces from plain values (grids are left to ``split_grid``).

    Returns:
        The config without the sampled keys (each bound and choice is validated on its
        own), and the spaces in file order.
    """
    from rllib_fair.cli.sweep import NOT_GRIDDABLE

    base, spaces = {}, {}
    for key, value in config.items():
        if is_space(value):
            if key in NOT_GRIDDABLE:
                raise TuneError(
                    f"config.{key}: a search space is not supported here ({NOT_GRIDDABLE[key]})"
                )
            spaces[key] = parse_space(f"config.{key}", value)
        else:
            base[key] = value
    return base, spaces


def parse_seeds(value: Any) -> list[int] | None:
    """``seeds: [0, 1, 2]`` or ``seeds: 3`` (= 0, 1, 2); None when not given."""
    if value is None:
        return None
    valid = f"a list of distinct integers >= 0, or a count in [1, {MAX_SEEDS}] (seeds 0..n-1)"
    if _is_int(value):
        if not 1 <= value <= MAX_SEEDS:
            raise TuneError(f"seeds: {value!r} is invalid; valid: {valid}")
        return list(range(value))
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_SEEDS
        or not all(_is_int(s) and s >= 0 for s in value)
        or len(set(value)) != len(value)
    ):
        raise TuneError(f"seeds: {value!r} is invalid; valid: {valid}")
    return list(value)


# ------------------------------------------------------------------ the tune: block


@dataclass
class SchedulerSpec:
    """A validated ``tune.scheduler`` block."""

    type: str
    metric: str
    mode: str
    options: dict[str, Any] = field(default_factory=dict)
    mutations: dict[str, list] = field(default_factory=dict)  # pbt: YAML key -> values


@dataclass
class SearchSpec:
    """A validated ``tune.search_alg`` block (one metric, or several for multi-objective)."""

    type: str
    metrics: list[str]
    modes: list[str]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class TuneSettings:
    """A validated ``tune:`` block."""

    scheduler: SchedulerSpec | None = None
    search_alg: SearchSpec | None = None
    max_concurrent_trials: int | None = None


def _int_at_least(low: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: _is_int(v) and v >= low), f"an integer >= {low}"


def _num_above(low: float, *, strict: bool = True) -> tuple[Callable[[Any], bool], str]:
    if strict:
        return (lambda v: _is_num(v) and v > low), f"a number > {low:g}"
    return (lambda v: _is_num(v) and v >= low), f"a number >= {low:g}"


_TIME_ATTR = (lambda v: v in TIME_ATTRS, f"one of {', '.join(TIME_ATTRS)}")
_UNIT_OPEN = (lambda v: _is_num(v) and 0 < v <= 0.5, "a number in (0, 0.5]")
_PROB = (lambda v: _is_num(v) and 0 <= v <= 1, "a number in [0, 1]")

#: Options of each scheduler (besides type, metric and mode) and what they accept.
SCHEDULER_OPTIONS: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    "asha": {
        "time_attr": _TIME_ATTR,
        "grace_period": _int_at_least(1),
        "max_t": _int_at_least(1),
        "reduction_factor": _num_above(1),
        "brackets": _int_at_least(1),
    },
    "median_stopping": {
        "time_attr": _TIME_ATTR,
        "grace_period": _num_above(0, strict=False),
        "min_samples_required": _int_at_least(1),
        "min_time_slice": _num_above(0, strict=False),
    },
    "pbt": {
        "time_attr": _TIME_ATTR,
        "perturbation_interval": _num_above(0),
        "hyperparam_mutations": (lambda v: isinstance(v, dict) and bool(v), "a mapping"),
        "quantile_fraction": _UNIT_OPEN,
        "resample_probability": _PROB,
    },
}
SCHEDULER_DEFAULTS = {
    "asha": {"time_attr": "training_iteration", "grace_period": 1, "reduction_factor": 2},
    "median_stopping": {"time_attr": "training_iteration", "grace_period": 1},
    "pbt": {"time_attr": "training_iteration", "perturbation_interval": 1},
}
SEARCH_ALGS = {"optuna": {"seed": _int_at_least(0)}, "hyperopt": {"seed": _int_at_least(0)}}
#: Search algorithms that take several metrics (multi-objective).
MULTI_OBJECTIVE = ("optuna",)


def _metrics(where: str, block: dict, check_metric: Callable[[str, str], str], multi: bool):
    """The block's metric(s) and mode(s), each checked; returns two lists."""
    if "metric" not in block or "mode" not in block:
        raise TuneError(f"{where}: metric and mode are required; valid: a result key and min/max")
    metric, mode = block["metric"], block["mode"]
    metrics = metric if multi and isinstance(metric, list) else [metric]
    modes = mode if multi and isinstance(mode, list) else [mode]
    if not metrics or len(metrics) != len(modes):
        raise TuneError(
            f"{where}.mode: {mode!r} is invalid; valid: one of min/max per metric "
            f"({len(metrics)} metric(s))"
        )
    out = []
    for m in metrics:
        if not isinstance(m, str):
            valid = "a result key" + (" or a list of result keys" if multi else "")
            raise TuneError(f"{where}.metric: {m!r} is invalid; valid: {valid}")
        out.append(check_metric(f"{where}.metric", m))
    for m in modes:
        if m not in MODES:
            raise TuneError(f"{where}.mode: {m!r} is invalid; valid: min or max")
    return out, list(modes)


def _options(where: str, block: dict, rules: dict) -> dict:
    options = {}
    for key, value in block.items():
        if key in ("type", "metric", "mode"):
            continue
        if key not in rules:
            valid = ", ".join(["type", "metric", "mode", *sorted(rules)])
            raise TuneError(f"{where}.{key}: unknown key; valid keys: {valid}")
        ok, text = rules[key]
        if not ok(value):
            raise TuneError(f"{where}.{key}: {value!r} is invalid; valid: {text}")
        options[key] = value
    return options


def parse_tune(
    block: Any,
    *,
    check_metric: Callable[[str, str], str],
    check_value: Callable[[str, str, Any], None],
) -> TuneSettings | None:
    """Validates a ``tune:`` block.

    Args:
        block: the block (None: no block).
        check_metric: ``(where, key) -> key``: the result-key check of the experiment
            (raises on keys the configured algorithm does not report).
        check_value: ``(where, config_key, value)``: validates one config value as a
            plain value of that key (raises on a bad key or value).

    Returns:
        The settings, or None without a block.
    """
    if block is None:
        return None
    if not isinstance(block, dict):
        raise TuneError(f"tune: must be a mapping with keys {', '.join(TUNE_KEYS)}, got {block!r}")
    unknown = sorted(str(k) for k in set(block) - set(TUNE_KEYS))
    if unknown:
        raise TuneError(f"tune.{unknown[0]}: unknown key; valid keys: {', '.join(TUNE_KEYS)}")
    out = TuneSettings()
    mct = block.get("max_concurrent_trials")
    if mct is not None and not (_is_int(mct) and mct >= 1):
        raise TuneError(f"tune.max_concurrent_trials: {mct!r} is invalid; valid: an integer >= 1")
    out.max_concurrent_trials = mct
    sched = block.get("scheduler")
    if sched is not None:
        where = "tune.scheduler"
        if not isinstance(sched, dict) or sched.get("type") not in SCHEDULER_OPTIONS:
            got = sched.get("type") if isinstance(sched, dict) else sched
            raise TuneError(
                f"{where}.type: {got!r} is invalid; valid: {', '.join(SCHEDULER_OPTIONS)}"
            )
        kind = sched["type"]
        (metric,), (mode,) = _metrics(where, sched, check_metric, multi=False)
        options = {**SCHEDULER_DEFAULTS[kind], **_options(where, sched, SCHEDULER_OPTIONS[kind])}
        if kind == "asha" and "max_t" in options and options["grace_period"] > options["max_t"]:
            raise TuneError(
                f"{where}.grace_period: {options['grace_period']!r} is invalid; valid: an "
                f"integer <= max_t ({options['max_t']})"
            )
        mutations = {}
        if kind == "pbt":
            raw = options.pop("hyperparam_mutations", None)
            if not raw:
                raise TuneError(
                    f"{where}.hyperparam_mutations: required for pbt; valid: a mapping of "
                    "config keys to lists of values, e.g. {lr: [0.0003, 0.001, 0.003]}"
                )
            for key, values in raw.items():
                at = f"{where}.hyperparam_mutations.{key}"
                if is_space(values) and set(values) == {"choice"}:
                    values = values["choice"]
                if not isinstance(values, list) or not values:
                    raise TuneError(
                        f"{at}: {values!r} is invalid; valid: a non-empty list of values (or "
                        "{choice: [...]}); continuous spaces are perturbed without bounds"
                    )
                for v in values:
                    check_value(at, key, v)
                mutations[str(key)] = list(values)
        out.scheduler = SchedulerSpec(kind, metric, mode, options, mutations)
    search = block.get("search_alg")
    if search is not None:
        where = "tune.search_alg"
        if not isinstance(search, dict) or search.get("type") not in SEARCH_ALGS:
            got = search.get("type") if isinstance(search, dict) else search
            raise TuneError(f"{where}.type: {got!r} is invalid; valid: {', '.join(SEARCH_ALGS)}")
        kind = search["type"]
        metrics, modes = _metrics(where, search, check_metric, multi=kind in MULTI_OBJECTIVE)
        options = _options(where, search, SEARCH_ALGS[kind])
        _check_installed(kind)
        out.search_alg = SearchSpec(kind, metrics, modes, options)
    if out.scheduler is not None and out.search_alg is not None and out.scheduler.type == "pbt":
        raise TuneError(
            "tune.search_alg: cannot be combined with scheduler pbt (PBT chooses the "
            "configurations itself); valid: one of the two"
        )
    return out


def _check_installed(kind: str) -> None:
    import importlib.util

    if importlib.util.find_spec(kind) is None:
        raise TuneError(
            f"tune.search_alg.type: {kind!r} needs the {kind} package, which is not installed; "
            "valid: pip install 'rllib-fair[tune]'"
        )


# ------------------------------------------------------------------ Tune objects


def build_scheduler(spec: SchedulerSpec | None, key_of: Callable[[str], str]):
    """The Tune scheduler of a validated block (None: FIFO)."""
    if spec is None:
        return None
    from ray.tune import schedulers

    kw = dict(spec.options)
    if spec.type == "asha":
        return schedulers.ASHAScheduler(metric=spec.metric, mode=spec.mode, **kw)
    if spec.type == "median_stopping":
        return schedulers.MedianStoppingRule(metric=spec.metric, mode=spec.mode, **kw)
    mutations = {key_of(k): list(v) for k, v in spec.mutations.items()}
    return schedulers.PopulationBasedTraining(
        metric=spec.metric, mode=spec.mode, hyperparam_mutations=mutations, **kw
    )


def build_search_alg(spec: SearchSpec | None, seeds: list[int] | None, *, constant_sampling: bool):
    """The Tune search algorithm (None: Tune's default random/grid generator).

    With seeds and a search algorithm, each suggestion is repeated on every seed
    (:class:`SeedRepeater`); with seeds and no search algorithm, random values are kept
    constant over the seed grid when ``constant_sampling``.
    """
    if spec is None:
        if not constant_sampling:
            return None
        from ray.tune.search.basic_variant import BasicVariantGenerator

        return BasicVariantGenerator(constant_grid_search=True)
    if spec.type == "hyperopt":
        from ray.tune.search.hyperopt import HyperOptSearch

        searcher = HyperOptSearch(
            metric=spec.metrics[0], mode=spec.modes[0], random_state_seed=spec.options.get("seed")
        )
    else:
        from ray.tune.search.optuna import OptunaSearch

        multi = len(spec.metrics) > 1
        searcher = OptunaSearch(
            metric=spec.metrics if multi else spec.metrics[0],
            mode=spec.modes if multi else spec.modes[0],
            seed=spec.options.get("seed"),
        )
    if seeds:
        return SeedRepeater(searcher, seeds)
    return searcher


def _seed_repeater_base():
    from ray.tune.search import Searcher

    return Searcher


class SeedRepeater(_seed_repeater_base()):
    """Runs every suggestion of a searcher once per seed (``config["seed"]``).

    Like Tune's ``Repeater`` but it sets the seed itself and averages every metric of
    a multi-objective searcher; the searcher sees one trial per configuration, with
    the mean over its seeds (NaN-skipping).
    """

    def __init__(self, searcher, seeds: list[int]):
        self.searcher = searcher
        self.seeds = list(seeds)
        self._metrics = searcher.metric if isinstance(searcher.metric, list) else [searcher.metric]
        self._groups: dict[str, dict] = {}  # trial id -> group
        self._current: dict | None = None
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    def set_search_properties(self, metric, mode, config, **spec) -> bool:
        """Forwards to the wrapped searcher."""
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def suggest(self, trial_id: str):
        """The searcher's next configuration, or the current one on its next seed."""
        if self._current is None or len(self._current["trials"]) == len(self.seeds):
            config = self.searcher.suggest(trial_id)
            if config is None or config == self.FINISHED:
                return config
            self._current = {"primary": trial_id, "config": dict(config), "trials": {}}
        group = self._current
        index = len(group["trials"])
        group["trials"][trial_id] = None
        self._groups[trial_id] = group
        return {**group["config"], "seed": self.seeds[index]}

    def on_trial_complete(self, trial_id: str, result: dict | None = None, **kwargs) -> None:
        """Records a seed's final metrics; reports the means once all seeds are done."""
        group = self._groups.get(trial_id)
        if group is None:
            return
        group["trials"][trial_id] = {
            m: float(result[m]) if result and _is_num(result.get(m)) else math.nan
            for m in self._metrics
        }
        done = [v for v in group["trials"].values() if v is not None]
        if len(done) < len(self.seeds):
            return
        means = {}
        for m in self._metrics:
            vals = [d[m] for d in done if not math.isnan(d[m])]
            means[m] = sum(vals) / len(vals) if vals else math.nan
        self.searcher.on_trial_complete(group["primary"], result=means, **kwargs)

    def get_state(self) -> dict:
        """State for Tune's experiment checkpoint (without the wrapped searcher)."""
        state = self.__dict__.copy()
        del state["searcher"]
        return state

    def set_state(self, state: dict) -> None:
        """Restores :meth:`get_state`."""
        self.__dict__.update(state)

    def save(self, checkpoint_path: str) -> None:
        """Saves the seed groups and the wrapped searcher in one file (Tune moves one file)."""
        inner = Path(f"{checkpoint_path}.inner")
        self.searcher.save(str(inner))
        blob = {"inner": inner.read_bytes(), "state": self.get_state()}
        inner.unlink()
        with open(checkpoint_path, "wb") as f:
            pickle.dump(blob, f)

    def restore(self, checkpoint_path: str) -> None:
        """Restores :meth:`save` (a file Tune wrote itself; never a user's file)."""
        with open(checkpoint_path, "rb") as f:
            blob = pickle.load(f)  # noqa: S301 - Tune's own experiment checkpoint
        inner = Path(f"{checkpoint_path}.inner")
        inner.write_bytes(blob["inner"])
        try:
            self.searcher.restore(str(inner))
        finally:
            inner.unlink()
        self.set_state(blob["state"])
