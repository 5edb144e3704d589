"""``rllib-fair reproduce PLAN``: a reproduction plan's cells as Ray Tune trials, then merged.

Every cell (method, setting, seed; :mod:`rllib_fair.reproduce.plan`) that has no result
file at the plan's budget becomes one Tune trial: it builds the cell's config from its
tuned example and overrides, trains to the budget, runs the plan's evaluator and reports
one row. The driver writes the row to ``<out>/<plan>/cells/<cell>.json`` as soon as the
trial ends (write to a temporary file, then rename: a killed run leaves whole files
only), so a campaign can be stopped and continued (``--resume``, or any rerun: finished
cells are skipped), spread over a cluster (``--address``) and committed cell by cell.
Each finished cell prints one progress line: cells done, CPU-hours spent, an estimate of
what is left; a running cell prints its env steps every :data:`PROGRESS_EVERY_S`
seconds. A method with ``share_inert_grid`` trains one grid point per (setting, seed)
first and its other points only where that run did not prove them identical; proven ones
are written as copies (:mod:`rllib_fair.reproduce.sharing`). A plan with staged
selection (``selection.seeds``) trains its grids on those seeds first and each chosen
point on the plan's seeds in a later round: every round is one Tune experiment of the
cells that can run now. When the trials end, the plan's tables, claims and figure are
merged (:mod:`rllib_fair.reproduce.merge`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from rllib_fair.cli.runner import plain_tune_output
from rllib_fair.reproduce.merge import cell_path, merge, read_cells, staged_choices
from rllib_fair.reproduce.plan import Cell, Plan, PlanError, load_plan
from rllib_fair.reproduce.sharing import group_of, schedule

#: The checkout whose tuned examples the plans start from.
ROOT = Path(__file__).resolve().parents[2]

#: Where the campaign's results live by default (committed with the repository).
DEFAULT_OUT = ROOT / "docs" / "results" / "campaign"


def cell_config(plan: Plan, cell: Cell, root: Path = ROOT):
    """``(config, evaluator, example path)``: the cell's config as its run builds it.

    The tuned example (its pass criteria dropped) with the plan's ``env_config`` entries
    and overrides, then configured by the plan's evaluator; not built into an algorithm.
    """
    from rllib_fair.cli.experiment import validate_experiment
    from rllib_fair.cli.experiment_file import load_experiments
    from rllib_fair.reproduce.evaluators import EVALUATORS

    path = plan.example_path(cell, root)
    ((name, spec),) = load_experiments(path).items()
    # a cell trains to the plan's budget and judges nothing: the example's pass criteria
    # (which name the example's own notion, not necessarily the setting's) are dropped
    spec = {k: v for k, v in spec.items() if k != "pass_criteria"}
    env_config = plan.env_config(cell)
    if env_config:
        spec = {**spec, "env_config": {**(spec.get("env_config") or {}), **env_config}}
    overrides = plan.overrides(cell)
    seed = overrides.pop("seed")
    runners = overrides.pop("num_env_runners")
    exp = validate_experiment(
        name, spec, config_overrides=overrides, seed=seed, num_env_runners=runners
    )
    evaluator = EVALUATORS[plan.evaluation["evaluator"]]()
    config = evaluator.configure(
        exp.config.copy(copy_frozen=False), plan.evaluation_for(cell.setting)
    )
    return config, evaluator, path


def with_resolver(plan: Plan, root: Path = ROOT) -> Plan:
    """``plan`` with a :attr:`~rllib_fair.reproduce.plan.Plan.resolver` on today's code.

    It builds each cell's config (:func:`cell_config`, once per method, setting and grid
    point: the seed is not part of the record) and returns its
    :func:`~rllib_fair.reproduce.resolved.resolved_settings`, or None where the config
    cannot be built (such a cell's row is then stale).
    """
    from rllib_fair.reproduce.resolved import resolved_settings

    bare = dataclasses.replace(plan, resolver=None)
    # (record, config class) per method, setting and grid point; (None, None) unbuildable
    cache: dict[tuple, tuple[dict | None, type | None]] = {}

    def built(cell: Cell) -> tuple[dict | None, type | None]:
        key = (cell.method, cell.setting, cell.point)
        if key not in cache:
            try:
                config = cell_config(bare, cell, root)[0]
                cache[key] = (resolved_settings(config), type(config))
            except (ValueError, OSError, KeyError, TypeError):
                cache[key] = (None, None)
        return cache[key]

    def resolve(cell: Cell) -> dict | None:
        return built(cell)[0]

    def config_class(cell: Cell) -> type | None:
        """The config class ``cell`` builds (its added settings upgrade older records)."""
        return built(cell)[1]

    resolve.config_class = config_class
    return dataclasses.replace(plan, resolver=resolve)


def run_cell(plan: Plan, cell: Cell, root: Path = ROOT, progress=None) -> dict:
    """Trains one cell to the plan's budget, evaluates it and returns its result row.

    ``progress(env_steps, seconds)``, when given, is called after each training
    iteration.
    """
    import torch
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    from rllib_fair.reproduce.curves import CurveRecorder
    from rllib_fair.reproduce.resolved import resolved_settings

    torch.set_num_threads(1)
    provenance = _provenance(root)
    config, evaluator, path = cell_config(plan, cell, root)
    resolved = resolved_settings(config)
    # an algorithm that can prove some keys inert (rllib_fair.reproduce.sharing) reports
    # a learner metric that is 0 only then; its largest value over the run is kept
    inert = getattr(config, "INERT_GRID", None)
    inert_max = 0.0
    start = time.time()
    algo = config.build_algo()
    steps, last = 0, {}
    recorder = CurveRecorder(plan.curves["metrics"], plan.curves["points"]) if plan.curves else None
    try:
        while steps < plan.budget_for(cell):
            last = algo.train()
            steps = int(last[NUM_ENV_STEPS_SAMPLED_LIFETIME])
            if inert is not None:
                inert_max = max(inert_max, _learner_max(last, inert["metric"]))
            if recorder is not None:
                recorder.add(steps, last)
            if progress is not None:
                progress(steps, time.time() - start)
        metrics = evaluator.measure(
            algo, last, plan.metric_paths(cell.setting), plan.evaluation_for(cell.setting)
        )
    finally:
        algo.stop()
    wall = time.time() - start
    row = {
        "plan": plan.name,
        "cell": cell.to_dict(),
        "example": str(path.relative_to(root)) if path.is_relative_to(root) else str(path),
        "budget": plan.budget_for(cell),
        "setup": plan.setup(cell, root),
        "resolved": resolved,
        "provenance": provenance,
        "env_steps": steps,
        "metrics": metrics,
        "wall_s": round(wall, 2),
        "cell_cpus": plan.cell_cpus,
        "cpu_hours": round(wall * plan.cell_cpus / 3600.0, 5),
    }
    if recorder is not None:
        row["curves"] = recorder.binned()
    if inert is not None:
        row["inert"] = {
            "metric": inert["metric"],
            "keys": list(inert["keys"]),
            "max": inert_max if math.isfinite(inert_max) else None,
        }
    return row


def _learner_max(result: dict, metric: str) -> float:
    """The largest value of a learner metric over the result's modules (inf: none)."""
    values = [
        float(v[metric])
        for v in (result.get("learners") or {}).values()
        if isinstance(v, dict) and metric in v
    ]
    if not values or any(math.isnan(v) for v in values):
        return math.inf
    return max(values)


#: Seconds between a running cell's progress reports.
PROGRESS_EVERY_S = 300.0


def _cell_trainable(config: dict, plan: Plan, root: str) -> None:
    from ray import tune

    last_report = [time.time()]

    def progress(steps: int, seconds: float) -> None:
        if time.time() - last_report[0] >= PROGRESS_EVERY_S:
            last_report[0] = time.time()
            tune.report({"env_steps": steps, "elapsed_s": round(seconds, 1)})

    row = run_cell(plan, Cell(**config["cell"]), Path(root), progress)
    tune.report({"row_json": json.dumps(row), "wall_s": row["wall_s"]})


#: What a cell's run depends on in the checkout: the package and the tuned examples.
CODE_PATHS = ("rllib_fair", "tuned_examples")


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _provenance(root: Path = ROOT) -> dict:
    """Where a cell ran: the commit, whether the code differed from it, the versions, host.

    ``uncommitted``: whether the package or the tuned examples had changes the commit
    does not hold (untracked files included); None outside a git checkout. Taken in the
    process that trains the cell (it imported the checkout's code when it started), so
    a driver started on an older commit does not name the wrong code.
    """
    import ray
    import torch

    commit = _git(root, "rev-parse", "--short", "HEAD")
    status = _git(root, "status", "--porcelain", "--", *CODE_PATHS) if commit else None
    return {
        "commit": commit or None,
        "uncommitted": None if status is None else bool(status),
        "ray": ray.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
    }


def write_cell(out: Path, plan: Plan, row: dict, provenance: dict) -> Path:
    """Writes one cell's row (temporary file, then rename) and returns its path.

    ``provenance`` is recorded where the row has none of its own (a copied grid point).
    """
    cell = Cell(**row["cell"])
    path = cell_path(out, plan, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**row, "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    # the training process's own record (run_cell) wins over the driver's
    row["provenance"] = row.get("provenance") or provenance
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(row, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


class Progress:
    """Counts finished cells and CPU-hours; says what is left."""

    def __init__(self, plan: Plan, total: int, done: int, spent_hours: float):
        self.plan, self.total, self.done, self.spent = plan, total, done, spent_hours
        self.new_hours: list[float] = []

    def line(self, row: dict) -> str:
        """Counts one finished cell's row and returns its progress line."""
        self.done += 1
        self.spent += float(row["cpu_hours"])
        self.new_hours.append(float(row["cpu_hours"]))
        per_cell = sum(self.new_hours) / len(self.new_hours)
        left = (self.total - self.done) * per_cell
        cell = Cell(**row["cell"])
        values = ", ".join(f"{k} {v:.4g}" for k, v in row["metrics"].items())
        return (
            f"[{self.plan.name}] {self.done}/{self.total} cells | {cell.id}: {values} "
            f"({row['wall_s'] / 60:.1f} min) | CPU-hours spent {self.spent:.2f}, "
            f"about {left:.2f} left"
        )


def _writer_callback(
    out: Path, plan: Plan, progress: Progress, failures: list, provenance: dict | None = None
):
    from ray.tune import Callback

    provenance = provenance or _provenance()

    class CellWriter(Callback):
        """Writes each finished cell's row as its trial completes."""

        def on_trial_result(self, iteration, trials, trial, result, **info):
            if "row_json" in result or "env_steps" not in result:
                return
            cell = Cell(**trial.config["cell"])
            budget = plan.budget_for(cell)
            print(
                f"[{plan.name}] {cell.id}: {int(result['env_steps']):,}/{budget:,} env steps "
                f"({result['env_steps'] / budget:.0%}) after {result['elapsed_s'] / 60:.1f} min",
                flush=True,
            )

        def on_trial_complete(self, iteration, trials, trial, **info):
            raw = (trial.last_result or {}).get("row_json")
            if raw is None:
                return
            row = json.loads(raw)
            write_cell(out, plan, row, provenance)
            print(progress.line(row), flush=True)

        def on_trial_error(self, iteration, trials, trial, **info):
            cell = Cell(**trial.config["cell"])
            failures.append(cell.id)
            print(f"[{plan.name}] {cell.id} failed; it stays pending", flush=True)

    return CellWriter()


def _write_copies(out: Path, plan: Plan, copies: list[dict], provenance, progress) -> None:
    """Writes the rows of grid points a proven-inert run stands for (see sharing)."""
    for row in copies:
        write_cell(out, plan, row, provenance)
        progress.done += 1
        print(
            f"[{plan.name}] {progress.done}/{progress.total} cells | "
            f"{Cell(**row['cell']).id}: copied from {row['same_as']} (its training proved "
            f"{', '.join(row['inert']['keys'])} inert: {row['inert']['metric']} was 0 "
            "throughout)",
            flush=True,
        )


def _fit(plan, cells, out, progress, provenance, failures, storage_path, max_concurrent):
    """Runs ``cells`` as one Tune experiment, writing each row as its trial ends."""
    from ray import tune

    if not cells:
        return
    trainable = tune.with_resources(
        tune.with_parameters(
            _cell_trainable, plan=dataclasses.replace(plan, resolver=None), root=str(ROOT)
        ),
        {"cpu": plan.cell_cpus},
    )
    tuner = tune.Tuner(
        trainable,
        param_space={"cell": tune.grid_search([c.to_dict() for c in cells])},
        tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent),
        run_config=tune.RunConfig(
            name=f"reproduce_{plan.name}_{int(time.time())}",
            storage_path=storage_path,
            callbacks=[_writer_callback(out, plan, progress, failures, provenance)],
            verbose=0,
        ),
    )
    with plain_tune_output():
        tuner.fit()


def run_plan(
    plan: Plan,
    out: Path = DEFAULT_OUT,
    *,
    seeds: tuple[int, ...] | None = None,
    methods: tuple[str, ...] | None = None,
    settings: tuple[str, ...] | None = None,
    storage_path: str | None = None,
    max_concurrent: int | None = None,
    plots: bool = True,
) -> int:
    """Runs the plan's pending cells as Tune trials and merges; 0 when every cell finished.

    ``seeds``, ``methods`` and ``settings`` select the cells to run (default: all of the
    plan's); the merge always covers every finished cell of the plan. A finished cell
    counts only where its row matches what today's code resolves it to
    (:func:`with_resolver`).
    """
    if plan.resolver is None:
        plan = with_resolver(plan)

    def asked(c: Cell) -> bool:
        return (methods is None or c.method in methods) and (
            settings is None or c.setting in settings
        )

    def state() -> tuple[list[Cell], dict[Cell, dict], list[dict]]:
        # the cells to run (a staged grid's chosen point joins once its selection cells
        # have all finished), the finished ones' rows, and every current row: one read
        rows, _ = read_cells(out, plan)
        done = {Cell(**r["cell"]): r for r in rows}
        cells = [c for c in plan.cells(seeds, staged_choices(plan, rows)) if asked(c)]
        return cells, done, rows

    full = [c for c in plan.full_cells() if asked(c) and (seeds is None or c.seed in seeds)]
    cells, done_rows, rows = state()
    finished_rows = [done_rows[c] for c in cells if c in done_rows]
    done = len(finished_rows)
    spent = sum(float(r.get("cpu_hours", 0.0)) for r in finished_rows)
    total = len(plan.full_cells())
    print(
        f"[{plan.name}] {len(full)} cells{'' if len(full) == total else f' (of {total})'}, "
        f"{done} finished, {len(full) - done} to run "
        f"({plan.budget:,} env steps each)",
        flush=True,
    )
    unchosen = {(c.method, c.setting) for c in full if plan.staged(c.method)} - set(
        staged_choices(plan, rows)
    )
    if unchosen:
        print(
            f"[{plan.name}] {len(unchosen)} grids choose their point on seeds "
            f"{', '.join(map(str, plan.selection_seeds))} first; the chosen point then "
            f"trains on seeds {', '.join(map(str, plan.seeds))}",
            flush=True,
        )
    failures: list[str] = []
    progress = Progress(plan, len(full), done, spent)
    provenance = None
    attempted: set[Cell] = set()
    while True:
        cells, done_rows, _ = state()
        pending = [c for c in cells if c not in attempted and c not in done_rows]
        if not pending:
            break
        provenance = provenance or _provenance()
        now, later, copies = schedule(out, plan, pending)
        # a group whose first run failed trains all its points (no second proof attempt)
        failed = {group_of(c) for c in attempted if c not in done_rows}
        now += [c for c in later if group_of(c) in failed]
        later = [c for c in later if group_of(c) not in failed]
        _write_copies(out, plan, copies, provenance, progress)
        attempted |= {Cell(**row["cell"]) for row in copies}
        if later:
            print(
                f"[{plan.name}] {len(later)} grid points wait for their group's first run: "
                "if it proves the grid's keys inert, they are copied from it",
                flush=True,
            )
        if not now:
            continue  # copies only: the next round sees them
        _fit(plan, now, out, progress, provenance, failures, storage_path, max_concurrent)
        attempted |= set(now)
    merged = merge(out, plan, plots=plots)
    print(f"[{plan.name}] merged {merged.n_cells} cells into {out / plan.name / 'README.md'}")
    for claim in plan.claims:
        print(f"[{plan.name}] claim {claim.id}: {merged.claims[claim.id]['verdict']}")
    cells, done_rows, _ = state()
    left = len(full) - sum(c in done_rows for c in cells)
    if left:
        print(f"[{plan.name}] {left} cells not finished: rerun to continue", flush=True)
        return 1
    return 0


def cmd_reproduce(args) -> int:
    """``rllib-fair reproduce PLAN``."""
    import ray

    from rllib_fair.cli.parser import error

    if args.plan == "list":
        from rllib_fair.reproduce.plan import shipped_plans

        out = Path(args.out) if args.out else DEFAULT_OUT
        print(f"{'plan':24s} {'finished':>13s} {'CPU-hours':>9s}  title (cells under {out})")
        for name, path in shipped_plans().items():
            plan = with_resolver(load_plan(path))
            rows, _ = read_cells(out, plan)
            hours = sum(float(r.get("cpu_hours", 0.0)) for r in rows)
            done = f"{len(rows)}/{len(plan.full_cells())}"
            print(f"{name:24s} {done:>13s} {hours:9.2f}  {plan.title}")
        return 0
    try:
        plan = load_plan(args.plan)
        if args.budget is not None:
            if args.budget < 1:
                raise PlanError(f"--budget: {args.budget!r} is invalid; valid: an integer >= 1")
            plan = plan.__class__(**{**plan.__dict__, "budget": int(args.budget)})
    except PlanError as e:
        return error(str(e))
    seeds = tuple(args.seeds) if args.seeds else None
    for seed in seeds or ():
        if seed not in plan.seeds + plan.selection_seeds:
            valid = ", ".join(map(str, plan.seeds + plan.selection_seeds))
            return error(f"--seeds: {seed!r} is invalid; valid: the plan's seeds ({valid})")
    for flag, chosen, valid in (
        ("--methods", args.methods, plan.methods),
        ("--settings", args.settings, plan.settings),
    ):
        for name in chosen or ():
            if name not in valid:
                return error(f"{flag}: {name!r} is invalid; valid: {', '.join(valid)}")
    out = Path(args.out) if args.out else DEFAULT_OUT
    if args.merge_only:
        merged = merge(out, with_resolver(plan), plots=not args.no_plots)
        print(f"[{plan.name}] merged {merged.n_cells} cells into {out / plan.name / 'README.md'}")
        return 0
    if args.address is not None:
        from rllib_fair.cli.connect import auth_problem

        problem = auth_problem(args.address)
        if problem:
            return error(problem)
    if not ray.is_initialized():
        ray.init(
            address=args.address or "local",
            num_cpus=args.num_cpus if args.address is None else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    storage = args.storage_path or str(Path(os.path.expanduser("~/ray_results")).resolve())
    return run_plan(
        plan,
        out,
        seeds=seeds,
        methods=tuple(args.methods) if args.methods else None,
        settings=tuple(args.settings) if args.settings else None,
        storage_path=storage,
        max_concurrent=args.max_concurrent,
        plots=not args.no_plots,
    )
