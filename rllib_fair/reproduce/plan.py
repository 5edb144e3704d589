"""A reproduction plan: the cells of one paper figure or table, its protocol and its claims.

A plan is a YAML file (the shipped ones live in ``rllib_fair/reproduce/plans/``)::

    name: xu2024_fig4                       # the results folder's name
    title: Xu et al. 2024, Fig. 4 ...       # one line, for the tables
    seeds: [0, 1, 2, 3, 4]                  # training seeds; every cell runs each
    budget: 1000000                         # env steps per cell
    paper_budget: 5000000                   # what the paper used (reported beside ours)
    budget_note: ...                        # why ours differs, when it does
    extends: lucbfair_binding               # optional: another plan, these keys replacing its
    example: tuned_examples/{method}/{setting}-{method}.yaml
    methods:                                # method key -> label (and optional overrides)
      ppo: {label: G-PPO}
      elbertpo: {label: ELBERT-PO, config: {...}}
      appo: {label: A-PPO, example: "tuned_examples/pocar/{setting}-appo.yaml"}
      myopic: {label: Myopic, budget: 1000}  # a method that learns nothing: its own budget
      sellf: {label: SELLF, grid: {beta_1: [1, 5], beta_2: [0.01, 0.1]}}  # a grid (below)
      pocar: {label: POCAR, grid: {...}, share_inert_grid: true}  # (below)
    settings:                               # setting key -> its notion and optional overrides
      lending: {notion: equal_opportunity, env_config: {...}}
      fico_ap: {notion: accuracy_parity, example_setting: lending_fico}  # {setting} in examples
      infectious: {notion: benefit_rate, evaluation: {episodes: 200}}  # this setting's own
      lending_long: {notion: equal_opportunity, example_setting: lending,
                     evaluation: {env_config: {max_steps: 10000}}}  # eval env over training's
    cells:                                  # optional overrides of one (method, setting)
      - {method: ppo, setting: lending, config: {lr: 0.001}}
    evaluation:
      evaluator: greedy_episodes            # a name in rllib_fair.reproduce.evaluators
      episodes: 5
      explore: false
      metrics: {bias: "fairness.{notion}.bias", reward_per_step: reward_per_step}
    paper:                                  # the paper's values: setting -> method -> metric
      lending: {ppo: {bias: 0.16}}
    claims:
      - id: elbert_bias_below_gppo
        text: ELBERT-PO's bias is below G-PPO's on every env
        metric: bias
        less: [elbertpo, ppo]               # or greater: [a, b], at_most: [a, x], at_least: [a, x]
        settings: [lending]                 # default: every setting
    selection:                              # with a grid: how one point is chosen
      disparity: bias                       # a plan metric: the disparity ...
      reward: reward_per_step               # ... and the reward the rule scores
      rule: sellf                           # sellf (Alg. 2, default), max_reward, min_disparity
      omega: 0.05                           # Alg. 2's tolerance (default 0.05)
      decimals: 2                           # optional: disparity rounded before the rule
      seeds: [0]                            # optional: choose on these seeds (below)
    curves:                                 # optional: result paths followed over training
      points: 100                           # bins per cell (default 100)
      metrics: {gap: fairness.qualification_gain.gain_gap_abs}

A cell is one (method, setting, seed); its config is the tuned example's, with the
method's, the setting's and the cell's ``config`` overrides applied in that order (and
the method's and the setting's ``env_config`` entries over the example's), the seed,
and ``num_env_runners: 0`` unless an override sets it (the cells are the unit of
parallelism: Ray Tune runs one per CPU, on one machine or a cluster).

A method with a ``grid`` (config key -> list of values) runs every combination of the
values (first key slowest) as its own cells, the point's values applied last; the cell id
names the point, ``<method>+<key>-<value>[+...]__<setting>__s<seed>`` (floats as ``%g``
without a ``+``), so it is a safe file stem and stays the same while the grid keeps that
point. The merge then picks one point per (method, setting) by the ``selection`` rule
(:mod:`rllib_fair.fairness.selection`) on the points' metric means over seeds, and the
tables and claims use the chosen point's cells.

With ``selection.seeds`` (seeds that are not among the plan's ``seeds``) the choice is
staged: a grid method's points train on the selection seeds only, the rule picks one
point per (method, setting) once every point has all of them, and only the chosen point
then trains on the plan's seeds, which alone enter the tables and claims (the choice is
not scored again on the runs it reports, and the grid costs its points once per
selection seed, not once per seed).

With ``share_inert_grid: true`` a grid method trains one point per (setting, seed) first;
when that run proves the grid's keys had no effect (its algorithm's ``INERT_GRID``
metric was 0 throughout, e.g. POCAR regularised by a disparity that is 0 by
construction), the other points are written as copies of it instead of trained
(:mod:`rllib_fair.reproduce.sharing`).

Every bad entry raises :class:`PlanError` with one line naming the key, the bad value and
what is valid.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The shipped plans.
PLAN_DIR = Path(__file__).resolve().parent / "plans"

#: The checkout the plans' tuned-example paths are relative to.
REPO_ROOT = Path(__file__).resolve().parents[2]

#: What of a tuned example decides a cell's run (its ``stop`` and ``pass_criteria`` do
#: not: a cell trains to the plan's budget and judges nothing).
EXAMPLE_SPEC_KEYS = ("run", "env", "env_config", "config")

#: The claim kinds: two methods compared on a metric, or one method against a number.
COMPARISONS = ("less", "greater")
THRESHOLDS = ("at_most", "at_least")
CLAIM_KINDS = COMPARISONS + THRESHOLDS

_TOP_KEYS = {
    "name",
    "title",
    "seeds",
    "budget",
    "paper_budget",
    "budget_note",
    "example",
    "methods",
    "settings",
    "cells",
    "evaluation",
    "paper",
    "claims",
    "cell_cpus",
    "curves",
    "selection",
}
#: What a setting's ``evaluation`` may set over the plan's protocol (each evaluator
#: takes those of them it reads: its ``SETTING_KEYS``).
SETTING_EVALUATION_KEYS = ("episodes", "env_config", "steps")
_REQUIRED = ("name", "title", "seeds", "budget", "example", "methods", "settings", "evaluation")


class PlanError(ValueError):
    """A plan entry is invalid (one line: the key, the bad value, what is valid)."""


@dataclass(frozen=True)
class Cell:
    """One training run of a plan: a method on a setting with one seed."""

    method: str
    setting: str
    seed: int
    point: str = ""  # the grid point's label (methods with a grid), else empty

    @property
    def id(self) -> str:
        """The cell's file stem: ``<method>[+<point>]__<setting>__s<seed>``."""
        method = f"{self.method}+{self.point}" if self.point else self.method
        return f"{method}__{self.setting}__s{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        """The cell as its result file stores it (``point`` only for a grid point)."""
        out: dict[str, Any] = {"method": self.method, "setting": self.setting, "seed": self.seed}
        if self.point:
            out["point"] = self.point
        return out


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, checked on a metric over seeds."""

    id: str
    text: str
    metric: str
    kind: str
    a: str
    b: str | None = None  # the other method (comparisons)
    threshold: float | None = None  # the number (thresholds)
    settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A validated plan (see the module docstring for the file's keys)."""

    name: str
    title: str
    seeds: tuple[int, ...]
    budget: int
    example: str
    methods: dict[str, dict]
    settings: dict[str, dict]
    evaluation: dict[str, Any]
    paper_budget: int | None = None
    budget_note: str = ""
    cell_overrides: tuple[dict, ...] = ()
    paper: dict[str, dict] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()
    cell_cpus: float = 1.0
    curves: dict[str, Any] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    #: ``cell -> dict``: what the current code resolves the cell's config to (the
    #: package's defaults: :mod:`rllib_fair.reproduce.resolved`); set by the runner,
    #: which can build configs. None: cells are judged on their setup alone.
    resolver: Any = field(default=None, compare=False, repr=False)

    def cells(self, seeds: tuple[int, ...] | None = None, chosen: dict | None = None) -> list[Cell]:
        """Every cell: setting by setting, seed by seed, method by method.

        In this order a campaign that stops early has every method on the same seeds of
        the settings it reached, which is what the paired comparisons need. ``seeds``
        keeps the cells of those seeds. With staged selection (:meth:`staged`) a grid
        method's points come first, on the selection seeds, and on the plan's seeds only
        the point ``chosen[(method, setting)]`` names (none while it is not chosen).
        """
        chosen = chosen or {}
        keep = set(self.seeds) | set(self.selection_seeds) if seeds is None else set(seeds)
        out = []
        for s in self.settings:
            for seed in self.selection_seeds:
                if seed in keep:
                    out += [
                        Cell(m, s, seed, label)
                        for m in self.methods
                        if self.staged(m)
                        for label in self.points(m)
                    ]
            for seed in self.seeds:
                if seed not in keep:
                    continue
                for m in self.methods:
                    if not self.staged(m):
                        out += [Cell(m, s, seed, label) for label in self.points(m)]
                    elif (m, s) in chosen:
                        out.append(Cell(m, s, seed, chosen[(m, s)]))
        return out

    def full_cells(self) -> list[Cell]:
        """Every cell the whole plan trains, a staged grid's chosen point at its first.

        Which point a staged selection chooses is not known before its selection cells
        ran; the count and the projected time do not depend on it.
        """
        first = {(m, s): next(iter(self.points(m))) for m in self.methods for s in self.settings}
        return self.cells(chosen=first)

    @property
    def selection_seeds(self) -> tuple[int, ...]:
        """The seeds a staged selection chooses on (``selection.seeds``; empty: not staged)."""
        return tuple(self.selection.get("seeds", ()))

    def staged(self, method: str) -> bool:
        """Whether ``method``'s grid point is chosen on the selection seeds first."""
        return bool(self.selection_seeds) and bool(self.methods[method].get("grid"))

    def counts(self, cell: Cell) -> bool:
        """Whether ``cell``'s seed is one the plan runs for its method.

        A plan seed, or a selection seed of a staged grid method; a row of any other
        seed is left out of the merge.
        """
        return cell.seed in self.seeds or (
            cell.seed in self.selection_seeds and self.staged(cell.method)
        )

    def points(self, method: str) -> dict[str, dict[str, Any]]:
        """The method's grid points, ``{label: {key: value}}`` (``{"": {}}`` without a grid)."""
        grid = self.methods[method].get("grid")
        if not grid:
            return {"": {}}
        combos = itertools.product(*grid.values())
        points = [dict(zip(grid, combo, strict=True)) for combo in combos]
        return {point_label(p): p for p in points}

    def budget_for(self, cell: Cell) -> int:
        """The env steps ``cell`` trains: its method's ``budget``, else the plan's."""
        return int(self.methods[cell.method].get("budget", self.budget))

    def label(self, method: str) -> str:
        """The method's label in tables and figures."""
        return str(self.methods[method].get("label", method))

    def example_file(self, cell: Cell) -> str:
        """The tuned example a cell starts from, relative to the repository.

        The method's template, else the plan's, filled with the method and setting.
        """
        template = self.methods[cell.method].get("example", self.example)
        setting = self.settings[cell.setting].get("example_setting", cell.setting)
        return template.format(method=cell.method, setting=setting)

    def example_path(self, cell: Cell, root: Path) -> Path:
        """The tuned example a cell starts from, under ``root``."""
        return root / self.example_file(cell)

    def overrides(self, cell: Cell) -> dict[str, Any]:
        """The config overrides of ``cell``: the method's, the setting's, then the cell's."""
        out: dict[str, Any] = {"num_env_runners": 0}
        out.update(self.methods[cell.method].get("config") or {})
        out.update(self.settings[cell.setting].get("config") or {})
        for entry in self.cell_overrides:
            if entry["method"] == cell.method and entry["setting"] == cell.setting:
                out.update(entry.get("config") or {})
        out.update(self.points(cell.method)[cell.point])
        out["seed"] = cell.seed
        return out

    def setup(self, cell: Cell, root: Path = REPO_ROOT) -> dict[str, Any]:
        """What the plan and its tuned example decide about ``cell``'s run.

        As the cell's result file records it, in JSON types: the tuned example's path
        and what it sets (``example_spec``: :func:`example_spec`, the example read under
        ``root``), the config overrides, the ``env_config`` entries, the budget and the
        evaluation protocol. A cell file whose recorded setup differs from this is stale
        (:func:`rllib_fair.reproduce.merge.finished`): the plan or the example changed
        after it ran. The package's own defaults are not part of it: the row's
        ``resolved`` record covers them (:attr:`resolver`).
        """
        setup = {
            "example": self.example_file(cell),
            "example_spec": example_spec(root / self.example_file(cell)),
            "overrides": self.overrides(cell),
            "env_config": self.env_config(cell),
            "budget": self.budget_for(cell),
            "evaluation": self.evaluation_for(cell.setting),
        }
        return json.loads(json.dumps(setup, sort_keys=True, default=str))

    def env_config(self, cell: Cell) -> dict[str, Any]:
        """The ``env_config`` entries ``cell`` sets over its tuned example's: method, setting."""
        out: dict[str, Any] = {}
        out.update(self.methods[cell.method].get("env_config") or {})
        out.update(self.settings[cell.setting].get("env_config") or {})
        return out

    def evaluation_for(self, setting: str) -> dict[str, Any]:
        """The evaluation protocol of ``setting``: the plan's, with the setting's overrides.

        A setting may set its own ``episodes``, for ``greedy_episodes`` an ``env_config``
        of the evaluation env over the training env's, and for ``deployment`` its own
        ``steps`` (``settings.<s>.evaluation``): the papers evaluate short-episode envs on
        more episodes, some on longer episodes than they train on, and SELLF's authors
        deploy each env for its own episode length. The protocol is otherwise the plan's.
        """
        own = self.settings[setting].get("evaluation") or {}
        return {**self.evaluation, **own} if own else self.evaluation

    def metric_paths(self, setting: str) -> dict[str, str]:
        """The evaluation metrics of ``setting``: name -> result path, ``{notion}`` filled."""
        notion = self.settings[setting].get("notion", "")
        return {k: v.format(notion=notion) for k, v in self.evaluation["metrics"].items()}


_SPEC_CACHE: dict[tuple, Any] = {}


def example_spec(path: Path) -> dict[str, Any] | None:
    """What a tuned example sets for a run: its :data:`EXAMPLE_SPEC_KEYS` entries.

    From the file's one experiment, comments and key order aside; None when the file
    cannot be read as one experiment (a cell's run would fail on it too).
    """
    import yaml

    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in _SPEC_CACHE:
            data = yaml.safe_load(path.read_text())
            spec = next(iter(data.values())) if isinstance(data, dict) and len(data) == 1 else None
            if isinstance(spec, dict):
                spec = {k: spec[k] for k in EXAMPLE_SPEC_KEYS if k in spec}
                spec = json.loads(json.dumps(spec, sort_keys=True, default=str))
            _SPEC_CACHE[key] = spec if isinstance(spec, dict) else None
        return _SPEC_CACHE[key]
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def _value_text(value: Any) -> str:
    """A grid value as it appears in a cell id (floats as ``%g``, ``1e+06`` as ``1e06``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}".replace("e+", "e")
    return str(value)


def point_label(point: dict[str, Any]) -> str:
    """A grid point's part of the cell id: ``<key>-<value>`` joined by ``+``."""
    return "+".join(f"{k}-{_value_text(v)}" for k, v in point.items())


#: Characters a grid key or value may show in a cell id.
_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
#: Most grid points one method may have.
MAX_POINTS = 1000
#: Config keys a grid may not vary (the cell, the setting or the runner set them).
_NOT_GRIDDED = ("seed", "num_env_runners", "fairness_notion")


def _fail(key: str, value: Any, valid: str) -> PlanError:
    return PlanError(f"{key}: {value!r} is invalid; valid: {valid}")


def _mapping(key: str, value: Any) -> dict:
    if not isinstance(value, dict) or not value:
        raise _fail(key, value, "a non-empty mapping")
    return value


def _int(key: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _fail(key, value, f"an integer >= {low}")
    return value


def _claim(i: int, raw: Any, methods: dict, settings: dict, metrics: dict) -> Claim:
    key = f"claims[{i}]"
    if not isinstance(raw, dict):
        raise _fail(
            key, raw, "a mapping with id, text, metric and one of " + ", ".join(CLAIM_KINDS)
        )
    kinds = [k for k in CLAIM_KINDS if k in raw]
    if len(kinds) != 1:
        raise _fail(f"{key}", sorted(raw), "exactly one of " + ", ".join(CLAIM_KINDS))
    kind = kinds[0]
    unknown = set(raw) - {"id", "text", "metric", "settings", kind}
    if unknown:
        raise _fail(
            f"{key}.{sorted(unknown)[0]}",
            raw[sorted(unknown)[0]],
            "id, text, metric, settings, " + kind,
        )
    for name in ("id", "text", "metric"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise _fail(f"{key}.{name}", raw.get(name), "a non-empty string")
    if raw["metric"] not in metrics:
        raise _fail(f"{key}.metric", raw["metric"], "one of " + ", ".join(metrics))
    pair = raw[kind]
    if not isinstance(pair, list) or len(pair) != 2:
        raise _fail(f"{key}.{kind}", pair, "a list of two entries")
    if pair[0] not in methods:
        raise _fail(f"{key}.{kind}[0]", pair[0], "one of the plan's methods: " + ", ".join(methods))
    b, threshold = None, None
    if kind in COMPARISONS:
        if pair[1] not in methods or pair[1] == pair[0]:
            raise _fail(f"{key}.{kind}[1]", pair[1], "another of the plan's methods")
        b = pair[1]
    else:
        if isinstance(pair[1], bool) or not isinstance(pair[1], (int, float)):
            raise _fail(f"{key}.{kind}[1]", pair[1], "a number")
        threshold = float(pair[1])
    chosen = raw.get("settings", list(settings))
    if not isinstance(chosen, list) or not chosen or any(s not in settings for s in chosen):
        raise _fail(
            f"{key}.settings", chosen, "a list of the plan's settings: " + ", ".join(settings)
        )
    return Claim(raw["id"], raw["text"], raw["metric"], kind, pair[0], b, threshold, tuple(chosen))


def _grid(method: str, raw: Any) -> dict[str, list]:
    """A method's ``grid`` entry, checked: config key -> distinct values, safe in an id."""
    key = f"methods.{method}.grid"
    grid = _mapping(key, raw)
    for k, values in grid.items():
        if not isinstance(k, str) or not k.isidentifier() or k in _NOT_GRIDDED:
            raise _fail(
                f"{key} key",
                k,
                "a config name (letters, digits, '_'), not " + ", ".join(_NOT_GRIDDED),
            )
        if not isinstance(values, list) or not values:
            raise _fail(f"{key}.{k}", values, "a non-empty list of values")
        texts = []
        for v in values:
            text = _value_text(v) if isinstance(v, (bool, int, float, str)) else ""
            if not text or set(text) - _SAFE:
                raise _fail(
                    f"{key}.{k}",
                    v,
                    "a number, true/false or a string of letters, digits, '.', '_', '-'",
                )
            texts.append(text)
        if len(set(texts)) != len(texts):
            raise _fail(f"{key}.{k}", values, "distinct values (as they appear in cell ids)")
    n = math.prod(len(v) for v in grid.values())
    if n > MAX_POINTS:
        raise _fail(key, f"{n} points", f"at most {MAX_POINTS} points")
    return {k: list(v) for k, v in grid.items()}


def _selection(raw: Any, metrics: dict, grids: bool, seeds: tuple = ()) -> dict[str, Any]:
    """The ``selection`` entry: ``{}`` without grids, else the rule's checked settings.

    ``seeds``: the plan's, which ``selection.seeds`` must avoid.
    """
    from rllib_fair.fairness.selection import DEFAULT_OMEGA, RULES

    if raw is None:
        if grids:
            raise PlanError(
                "selection: missing; a plan whose methods have a grid needs "
                "selection: {disparity: <metric>, reward: <metric>}"
            )
        return {}
    allowed = {"disparity", "reward", "rule", "omega", "decimals", "seeds"}
    if not isinstance(raw, dict) or set(raw) - allowed:
        raise _fail("selection", raw, "a mapping of " + ", ".join(sorted(allowed)))
    if not grids:
        raise _fail("selection", raw, "only with a method that has a grid")
    for part in ("disparity", "reward"):
        if raw.get(part) not in metrics:
            raise _fail(f"selection.{part}", raw.get(part), "one of " + ", ".join(metrics))
    rule = raw.get("rule", "sellf")
    if rule not in RULES:
        raise _fail("selection.rule", rule, "one of " + ", ".join(RULES))
    omega = raw.get("omega", DEFAULT_OMEGA)
    if isinstance(omega, bool) or not isinstance(omega, (int, float)) or not omega >= 0:
        raise _fail("selection.omega", omega, "a number >= 0")
    decimals = raw.get("decimals")
    if decimals is not None:
        decimals = _int("selection.decimals", decimals)
    chosen_on = raw.get("seeds", [])
    if (
        not isinstance(chosen_on, list)
        or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in chosen_on)
        or len(set(chosen_on)) != len(chosen_on)
        or set(chosen_on) & set(seeds)
    ):
        raise _fail(
            "selection.seeds",
            chosen_on,
            "a list of distinct integers >= 0 that are not among the plan's seeds "
            f"({', '.join(map(str, seeds))})",
        )
    return {
        "disparity": raw["disparity"],
        "reward": raw["reward"],
        "rule": rule,
        "omega": float(omega),
        "decimals": decimals,
        "seeds": tuple(chosen_on),
    }


def _curves(raw: Any) -> dict[str, Any]:
    """The ``curves`` entry: ``{}`` when absent, else ``{"points": n, "metrics": {...}}``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - {"points", "metrics"}:
        raise _fail("curves", raw, "a mapping of points and metrics")
    from rllib_fair.reproduce.curves import DEFAULT_POINTS

    points = _int("curves.points", raw.get("points", DEFAULT_POINTS), 1)
    metrics = _mapping("curves.metrics", raw.get("metrics"))
    for k, v in metrics.items():
        if not isinstance(k, str) or not k or k == "env_steps":
            raise _fail("curves.metrics key", k, "a non-empty name other than env_steps")
        if not isinstance(v, str) or not v:
            raise _fail(f"curves.metrics.{k}", v, "a result path such as episode_return_mean")
    return {"points": points, "metrics": dict(metrics)}


def parse_plan(data: Any, source: str = "") -> Plan:
    """Checks a plan's data (as loaded from YAML) and returns the :class:`Plan`."""
    if not isinstance(data, dict):
        raise _fail("plan", type(data).__name__, "a mapping of " + ", ".join(_REQUIRED))
    for key in data:
        if key not in _TOP_KEYS:
            raise _fail(str(key), data[key], "a key among " + ", ".join(sorted(_TOP_KEYS)))
    for key in _REQUIRED:
        if key not in data:
            raise PlanError(f"{key}: missing; a plan needs " + ", ".join(_REQUIRED))
    name = data["name"]
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise _fail("name", name, "letters, digits, '_' and '-'")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or len(set(seeds)) != len(seeds):
        raise _fail("seeds", seeds, "a non-empty list of distinct integers >= 0")
    seeds = tuple(_int("seeds[]", s) for s in seeds)
    budget = _int("budget", data["budget"], 1)
    paper_budget = data.get("paper_budget")
    if paper_budget is not None:
        paper_budget = _int("paper_budget", paper_budget, 1)
    example = data["example"]
    if not isinstance(example, str) or not example.endswith(".yaml"):
        raise _fail("example", example, "a path template ending in .yaml")
    methods = _mapping("methods", data["methods"])
    settings = _mapping("settings", data["settings"])
    for section, entries in (("methods", methods), ("settings", settings)):
        for k, v in entries.items():
            if not isinstance(k, str) or "__" in k or not k:
                raise _fail(f"{section} key", k, "a non-empty name without '__'")
            allowed = {"label", "config", "env_config", "notion"} | (
                {"example", "budget", "grid", "share_inert_grid"}
                if section == "methods"
                else {"example_setting", "evaluation"}
            )
            if section == "methods" and "budget" in v:
                _int(f"methods.{k}.budget", v["budget"], 1)
            if not isinstance(v, dict) or set(v) - allowed:
                raise _fail(f"{section}.{k}", v, "a mapping of " + ", ".join(sorted(allowed)))
            if section == "methods" and "grid" in v:
                _grid(k, v["grid"])
            if section == "methods" and "share_inert_grid" in v:
                if not isinstance(v["share_inert_grid"], bool):
                    raise _fail(
                        f"methods.{k}.share_inert_grid", v["share_inert_grid"], "true or false"
                    )
                if v["share_inert_grid"] and "grid" not in v:
                    raise _fail(
                        f"methods.{k}.share_inert_grid", True, "false, or a method with a grid"
                    )
            if section == "settings" and not isinstance(v.get("example_setting", "x"), str):
                raise _fail(f"settings.{k}.example_setting", v["example_setting"], "a name")
            if not str(v.get("example", ".yaml")).endswith(".yaml"):
                raise _fail(
                    f"{section}.{k}.example", v["example"], "a path template ending in .yaml"
                )
            for part in ("config", "env_config"):
                if not isinstance(v.get(part, {}), dict):
                    raise _fail(f"{section}.{k}.{part}", v[part], f"a mapping of {part} overrides")
    cells = data.get("cells") or []
    if not isinstance(cells, list):
        raise _fail("cells", cells, "a list of {method, setting, config}")
    for i, entry in enumerate(cells):
        if (
            not isinstance(entry, dict)
            or entry.get("method") not in methods
            or entry.get("setting") not in settings
            or not isinstance(entry.get("config", {}), dict)
        ):
            raise _fail(
                f"cells[{i}]", entry, "{method: <a method>, setting: <a setting>, config: {...}}"
            )
    evaluation = _mapping("evaluation", data["evaluation"])
    from rllib_fair.reproduce.evaluators import EVALUATORS

    evaluator = evaluation.get("evaluator", "greedy_episodes")
    if evaluator not in EVALUATORS:
        raise _fail("evaluation.evaluator", evaluator, "one of " + ", ".join(sorted(EVALUATORS)))
    metrics = _mapping("evaluation.metrics", evaluation.get("metrics"))
    # an evaluator with named outputs has its paths checked here, before any cell trains
    outputs = getattr(EVALUATORS[evaluator], "OUTPUTS", None)
    for k, v in metrics.items():
        if not isinstance(v, str) or not v:
            raise _fail(
                f"evaluation.metrics.{k}", v, "a result path such as fairness.{notion}.bias"
            )
        if outputs is not None and v not in outputs:
            raise _fail(
                f"evaluation.metrics.{k}", v, f"an output of {evaluator}: " + ", ".join(outputs)
            )
    episodes = _int("evaluation.episodes", evaluation.get("episodes", 5), 1)
    explore = evaluation.get("explore", False)
    if not isinstance(explore, bool):
        raise _fail("evaluation.explore", explore, "true or false")
    evaluation = {**evaluation, "evaluator": evaluator, "episodes": episodes, "explore": explore}
    for k, v in settings.items():
        if "evaluation" not in v:
            continue
        own = v["evaluation"]
        if not isinstance(own, dict) or not own or set(own) - set(SETTING_EVALUATION_KEYS):
            raise _fail(
                f"settings.{k}.evaluation",
                own,
                "a mapping of " + ", ".join(SETTING_EVALUATION_KEYS),
            )
        for key in sorted(set(own) - set(getattr(EVALUATORS[evaluator], "SETTING_KEYS", ()))):
            takers = [n for n, c in EVALUATORS.items() if key in getattr(c, "SETTING_KEYS", ())]
            raise _fail(
                f"settings.{k}.evaluation.{key}",
                own[key],
                f"nothing: only {', '.join(takers)} read a setting's own {key}",
            )
        if "episodes" in own:
            _int(f"settings.{k}.evaluation.episodes", own["episodes"], 1)
        if "steps" in own:
            _int(f"settings.{k}.evaluation.steps", own["steps"], 1)
        if "env_config" in own:
            if not isinstance(own["env_config"], dict) or not own["env_config"]:
                raise _fail(
                    f"settings.{k}.evaluation.env_config",
                    own["env_config"],
                    "a non-empty mapping of the evaluation env's settings",
                )
    paper = data.get("paper") or {}
    if not isinstance(paper, dict):
        raise _fail("paper", paper, "a mapping setting -> method -> metric -> value")
    for s, by_method in paper.items():
        if s not in settings or not isinstance(by_method, dict):
            raise _fail(f"paper.{s}", by_method, "a setting of the plan mapping methods to values")
        for m, values in by_method.items():
            if m not in methods or not isinstance(values, dict):
                raise _fail(
                    f"paper.{s}.{m}", values, "a method of the plan mapping metrics to numbers"
                )
            for k, v in values.items():
                if k not in metrics or isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise _fail(f"paper.{s}.{m}.{k}", v, "a number for one of the plan's metrics")
    raw_claims = data.get("claims") or []
    if not isinstance(raw_claims, list):
        raise _fail("claims", raw_claims, "a list of claims")
    claims = tuple(_claim(i, c, methods, settings, metrics) for i, c in enumerate(raw_claims))
    if len({c.id for c in claims}) != len(claims):
        raise _fail("claims", [c.id for c in claims], "claims with distinct ids")
    cell_cpus = data.get("cell_cpus", 1.0)
    if isinstance(cell_cpus, bool) or not isinstance(cell_cpus, (int, float)) or cell_cpus <= 0:
        raise _fail("cell_cpus", cell_cpus, "a number > 0")
    curves = _curves(data.get("curves"))
    grids = any("grid" in v for v in methods.values())
    selection = _selection(data.get("selection"), metrics, grids, seeds)
    return Plan(
        name=name,
        title=str(data["title"]),
        seeds=seeds,
        budget=budget,
        example=example,
        methods=methods,
        settings=settings,
        evaluation=evaluation,
        paper_budget=paper_budget,
        budget_note=str(data.get("budget_note") or ""),
        cell_overrides=tuple(cells),
        paper=paper,
        claims=claims,
        cell_cpus=float(cell_cpus),
        curves=curves,
        selection=selection,
        source=source,
    )


def shipped_plans() -> dict[str, Path]:
    """``{name: path}`` of the plans shipped with the package."""
    return {p.stem: p for p in sorted(PLAN_DIR.glob("*.yaml"))}


def _read_plan_file(name_or_path: str | Path, key: str = "PLAN") -> tuple[Path, Any]:
    import yaml

    shipped = shipped_plans()
    path = shipped.get(str(name_or_path), Path(name_or_path))
    if not path.is_file():
        raise _fail(key, str(name_or_path), "a plan file or one of " + ", ".join(shipped))
    try:
        return path, yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PlanError(f"{key}: {str(path)!r} cannot be read: {first}") from None


def load_plan(name_or_path: str | Path) -> Plan:
    """A shipped plan by name, or a plan file by path (one-line :class:`PlanError`).

    A plan with ``extends: <plan>`` (a shipped name, or a file path: relative to the
    extending plan's own folder, or absolute; never to the current directory) is that
    plan with the extending file's top-level keys put in place of the base's, whole (a
    ``settings`` given replaces the base's ``settings``); bases may extend further
    plans, never in a cycle. An extending plan has a ``name`` of its own, different from
    every base's (its cells would otherwise overwrite the base's results).
    """
    path, data = _read_plan_file(name_or_path)
    seen = [path.resolve()]
    base_names = []
    while isinstance(data, dict) and "extends" in data:
        base_name = data["extends"]
        if not isinstance(base_name, str) or not base_name:
            raise _fail("extends", base_name, "a shipped plan's name or a plan file's path")
        if "name" not in data:
            raise PlanError(
                f"name: missing; a plan that extends {base_name!r} needs its own name (the "
                "cells would land in the base plan's results folder)"
            )
        shipped = shipped_plans()
        if base_name in shipped:
            base_path, base = _read_plan_file(base_name, key="extends")
        else:
            candidate = path.parent / base_name  # an absolute base_name stays absolute
            if not candidate.is_file():
                raise _fail(
                    "extends",
                    base_name,
                    f"a plan file relative to {str(path.parent)!r} or one of " + ", ".join(shipped),
                )
            base_path, base = _read_plan_file(candidate, key="extends")
        if base_path.resolve() in seen:
            raise _fail("extends", base_name, "a plan that does not extend itself (a cycle)")
        seen.append(base_path.resolve())
        if not isinstance(base, dict):
            raise _fail("extends", base_name, "a plan file holding a mapping")
        if "name" in base:
            base_names.append(str(base["name"]))
        data = {**base, **{k: v for k, v in data.items() if k != "extends"}}
        path = base_path
    if isinstance(data, dict) and str(data.get("name")) in base_names:
        raise _fail(
            "name",
            data["name"],
            "a name other than its base plans' ("
            + ", ".join(base_names)
            + "): the cells would overwrite theirs",
        )
    return parse_plan(data, source=str(seen[0]))
