"""Command line: ``rllib-fair train FILE.yaml``, ``evaluate CHECKPOINT``, ``envs``, ``algos``.

Exit codes: 0 success; 1 a run failed or ``--as-test`` criteria were not met;
2 bad input (one line on stderr naming the key, the bad value and the valid choices,
and nothing written).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


class _HelpFormatter(argparse.HelpFormatter):
    """Adds ``(default: X)`` once.

    Not where the help text already names its default, and not for flags and options
    whose default is "not given".
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


#: How a usage error names what a typed option accepts.
_TYPE_WORDS = {"int": "an integer", "float": "a number"}


def _usage_line(prog: str, message: str) -> str:
    """One line, in the package's wording, of argparse's error ``message`` (parser ``prog``).

    ``argument --seed: invalid int value: 'abc'`` becomes ``--seed: 'abc' is invalid;
    valid: an integer``; other messages keep argparse's words, prefixed with the
    subcommand, and say where the usage is.
    """
    import re

    sub = prog.split(" ", 1)[1] if " " in prog else ""
    m = re.fullmatch(r"argument (\S+?)(?:/\S+)?: invalid (\w+) value: (.+)", message)
    if m and m.group(2) in _TYPE_WORDS:
        return f"{m.group(1)}: {m.group(3)} is invalid; valid: {_TYPE_WORDS[m.group(2)]}"
    m = re.fullmatch(
        r"argument (\S+?)(?:/\S+)?: invalid choice: (.+?) \(choose from (.+)\)", message
    )
    if m:
        choices = m.group(3).replace("'", "")
        return f"{m.group(1)}: invalid choice: {m.group(2)}; valid choices: {choices}"
    text = message.removeprefix("argument ")
    where = f"{sub}: " if sub else ""
    return f"{where}{text} (usage: {prog} --help)"


class _Parser(argparse.ArgumentParser):
    """argparse's parser with one-line usage errors (``rllib-fair: error: ...``, exit 2).

    Its subcommand parsers are of this class too (argparse makes them with the parent's).
    """

    def error(self, message: str):
        """Prints one line naming the argument, the bad value and what is valid; exits 2."""
        self.exit(2, f"rllib-fair: error: {_usage_line(self.prog, message)}\n")


def _parser() -> argparse.ArgumentParser:
    fmt = _HelpFormatter
    p = _Parser(
        prog="rllib-fair",
        description="Long-term fairness experiments on Ray RLlib.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser(
        "train", help="run a tuned-example YAML file through Ray Tune", formatter_class=fmt
    )
    t.add_argument("file", help="tuned-example YAML file")
    t.add_argument(
        "--as-test",
        action="store_true",
        help=(
            "check pass_criteria (all on one iteration, which their budget entry puts at "
            ">= 80%% of the stop budget); stop a trial there; exit 1 if never met"
        ),
    )
    t.add_argument("--stop", action="append", metavar="KEY=VALUE", help="override a stop value")
    t.add_argument(
        "--config", action="append", metavar="KEY=VALUE", help="override a config setting"
    )
    t.add_argument("--num-env-runners", type=int, default=None, help="remote env runners")
    t.add_argument("--storage-path", default=None, help="results folder (default: ./results)")
    t.add_argument("--seed", type=int, default=None, help="random seed of every trial")
    t.add_argument(
        "--num-cpus",
        type=int,
        default=None,
        help="CPUs of the local Ray instance (default: all cores; not with --address)",
    )
    t.add_argument(
        "--address",
        default=None,
        help=(
            "Ray cluster to run on: 'auto' (a cluster started with `ray start` on this "
            "machine) or HOST:PORT of its head node; default: $RAY_ADDRESS if set, else a "
            "private local Ray instance"
        ),
    )
    t.add_argument(
        "--resume",
        action="store_true",
        help=(
            "continue an interrupted run of the same file and storage path from its last "
            "checkpoints; finished trials are not rerun"
        ),
    )
    t.add_argument(
        "--no-resource-check",
        action="store_true",
        help="skip the check that one trial fits the cluster (for autoscaling clusters)",
    )
    e = sub.add_parser(
        "evaluate",
        help="deploy a checkpoint for N steps on several seeds (SELLF's protocol)",
        formatter_class=fmt,
    )
    e.add_argument(
        "checkpoint",
        help="checkpoint folder, a trial folder (its newest checkpoint) or an experiment "
        "folder (a sweep: the trial its selection.json chose; otherwise the newest checkpoint)",
    )
    e.add_argument("--steps", type=int, default=10_000, help="deployment steps per seed")
    e.add_argument("--seeds", type=int, default=10, help="number of seeds (0..N-1)")
    e.add_argument(
        "--window",
        type=int,
        default=None,
        help="disparity window in decisions (default: the checkpoint config's)",
    )
    e.add_argument("--notion", default=None, help="fairness notion (default: the config's)")
    e.add_argument("--explore", action="store_true", help="sample actions instead of argmax")
    e.add_argument("--json", default=None, help="also write the summary to this file")
    c = sub.add_parser(
        "compare",
        help="table and plots of finished experiments, side by side (no retraining)",
        formatter_class=fmt,
    )
    c.add_argument(
        "results",
        nargs="+",
        help="experiment folders (or folders holding them), or per-run CSV files of the "
        "reproduction scripts",
    )
    c.add_argument(
        "--out",
        default=None,
        help="output folder (default: FIRST_RESULTS/compare for experiment folders, "
        "./results/compare_<name> for a CSV file)",
    )
    c.add_argument(
        "--last", type=int, default=1, help="final value = mean of a trial's last N iterations"
    )
    c.add_argument("--no-plots", action="store_true", help="table, CSV and JSON only")
    sub.add_parser("envs", help="list the registered environments")
    sub.add_parser("algos", help="list the registered algorithms")
    sub.add_parser("examples", help="list the tuned-example YAML files of this checkout")
    return p


def _cmd_compare(args) -> int:
    from pathlib import Path

    from rllib_fair.cli.compare import CompareError, compare

    if args.last < 1:
        return _error(f"--last: {args.last} is invalid; valid: an integer >= 1")
    first = Path(args.results[0])
    # a CSV's own folder may be a tracked one (docs/results/): its summary goes under
    # ./results, which the storage default already uses
    out = args.out or str(
        Path("results") / f"compare_{first.stem}" if first.suffix == ".csv" else first / "compare"
    )
    try:
        result = compare(args.results, out, last=args.last, plots=not args.no_plots)
    except CompareError as e:
        return _error(str(e))
    print(result["table"])
    for block in (result["legend"], *result["notes"]):
        if block:
            print(f"\n{block}")
    print(f"\nwritten: {', '.join(result['files'])}")
    for fig in result["figures"]:
        print(f"figure:  {fig}")
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rllib-fair")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _cmd_examples() -> int:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "tuned_examples"
    files = sorted(root.glob("*/*.yaml"))
    if not files:
        print(
            "rllib-fair: no tuned_examples/ folder next to the package (they ship with the "
            "repository, not the wheel)",
            file=sys.stderr,
        )
        return 1
    import yaml

    for f in files:
        try:
            specs = yaml.safe_load(f.read_text()) or {}
        except yaml.YAMLError:
            specs = {}
        for name, spec in specs.items():
            if isinstance(spec, dict):
                print(
                    f"{f.relative_to(root.parent)}  {name}: {spec.get('run')} on {spec.get('env')}"
                )
    return 0


def _cmd_envs() -> int:
    from rllib_fair.envs import ENV_IDS, env_info

    for env_id in ENV_IDS:
        m = env_info(env_id)
        print(f"{env_id}")
        print(f"    groups:  {', '.join(m['group_names'])}")
        notions = [
            n + (" (default)" if n == m["default_notion"] else "") for n in m["supported_notions"]
        ]
        print(f"    notions: {', '.join(notions)}")
        print(f"    {m['description']}")
    return 0


def _cmd_algos() -> int:
    from rllib_fair.algorithms import ALGORITHMS

    width = max(len(name) for name in ALGORITHMS)
    for name, spec in sorted(ALGORITHMS.items()):
        print(f"{name:<{width}}  {spec.module}.{spec.algo_class}")
        print(f"{'':<{width}}  {spec.paper}")
    return 0


def _cmd_train(args) -> int:
    from rllib_fair.cli.experiment import (
        ExperimentError,
        load_experiments,
        parse_overrides,
        validate_experiment,
    )

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        specs = load_experiments(args.file)
        stop = parse_overrides(args.stop, "--stop")
        config = parse_overrides(args.config, "--config")
        exps = [
            validate_experiment(
                name,
                spec,
                stop_overrides=stop,
                config_overrides=config,
                num_env_runners=args.num_env_runners,
                seed=args.seed,
                storage_path=args.storage_path,
                source=args.file,
                as_test=args.as_test,
            )
            for name, spec in specs.items()
        ]
        if args.as_test:
            missing = [e.name for e in exps if not e.pass_criteria]
            if missing:
                raise ExperimentError(
                    "pass_criteria: --as-test needs a pass_criteria block; "
                    f"missing in {missing[0]!r}"
                )
    except ExperimentError as e:
        print(f"rllib-fair: error: {e}", file=sys.stderr)
        return 2

    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if args.num_cpus is not None and args.num_cpus < 1:
        return _error(f"--num-cpus: {args.num_cpus} is invalid; valid: an integer >= 1")
    if address is not None and args.num_cpus is not None:
        return _error(
            f"--num-cpus: {args.num_cpus} cannot be combined with --address/RAY_ADDRESS "
            f"{address!r}; the cluster's own resources are used"
        )
    from rllib_fair.cli.runner import check_resources, experiment_dir
    from rllib_fair.cli.storage import ExperimentLock, StorageError

    if address is None and not args.no_resource_check:
        # A private local instance: its resources are known before it starts.
        local = {"CPU": float(args.num_cpus or os.cpu_count() or 1), "GPU": float(_num_gpus())}
        for exp in exps:
            problem = check_resources(exp, local, [local])
            if problem:
                return _error(problem)

    locks = [ExperimentLock(experiment_dir(exp, args.storage_path)) for exp in exps]
    try:
        for lock in locks:
            lock.acquire()
    except StorageError as e:
        for lock in locks:
            lock.release()
        return _error(str(e))
    try:
        if args.resume:
            problem = _check_resume(args, exps)
            if problem:
                return _error(problem)
        return _train_locked(args, exps, address)
    except KeyboardInterrupt:  # before Tune's loop (and its checkpointing) began
        print(
            "rllib-fair: interrupted before training started; nothing to resume",
            file=sys.stderr,
        )
        return 130
    finally:
        for lock in locks:
            lock.release()


def _check_resume(args, exps) -> str | None:
    """Why ``--resume`` cannot go on (one line), or None; then repairs Tune's state.

    The checks read only; the repairs (a cut experiment state put back from the copy,
    stale trial decisions cleared) run once every check passed.
    """
    from rllib_fair.cli.runner import can_resume, experiment_dir
    from rllib_fair.cli.storage import (
        StorageError,
        drop_stale_decisions,
        repair_experiment_state,
        resume_plan,
    )

    folders = []
    for exp in exps:
        folder = experiment_dir(exp, args.storage_path)
        if not can_resume(exp, args.storage_path):
            return (
                f"--resume: no interrupted run of {exp.name!r} to resume under "
                f"{args.storage_path or exp.storage_path or 'results'!r}; run without "
                "--resume first"
            )
        try:  # a corrupted checkpoint is named here, before anything starts
            resume_plan(folder, move_incomplete=False)
        except StorageError as e:
            return str(e)
        folders.append((exp, folder))
    for exp, folder in folders:
        try:
            note = repair_experiment_state(folder)
        except StorageError as e:
            return str(e)
        if note:
            print(f"[{exp.name}] resume: {note}", file=sys.stderr)
        stops = [d for d in drop_stale_decisions(folder) if d.endswith("(STOP)")]
        if stops:
            print(
                f"[{exp.name}] resume: cleared the STOP that Ray Tune saved for trial(s) "
                f"{', '.join(s.split()[0] for s in stops)} while a checkpoint was being "
                "written (it would end them one iteration after the restore)",
                file=sys.stderr,
            )
    return None


def _train_locked(args, exps, address) -> int:
    """Starts Ray and runs the validated experiments (their folders are locked)."""
    import ray
    import torch

    from rllib_fair.cli.runner import (
        RunError,
        check_pass,
        check_resources,
        experiment_dir,
        print_table,
        run_experiment,
    )
    from rllib_fair.cli.storage import resume_plan

    torch.set_num_threads(1)
    if address is not None:  # also when this process already runs Ray (notebooks, tests)
        from rllib_fair.cli.connect import auth_problem

        problem = auth_problem(address)
        if problem:
            return _error(problem)
    if not ray.is_initialized():
        try:
            ray.init(
                # "local": never attach to a cluster through a stale `ray start` file.
                address=address or "local",
                num_cpus=args.num_cpus if address is None else None,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
            )
        except (ConnectionError, RuntimeError, ValueError) as e:
            text = str(e).strip().splitlines()
            return _error(f"--address: cannot connect to {address!r}: {text[0] if text else e}")
    if address is not None and not args.no_resource_check:
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        for exp in exps:
            problem = check_resources(exp, ray.cluster_resources(), nodes)
            if problem:
                return _error(problem + " (an autoscaling cluster: pass --no-resource-check)")
    code = 0
    messages = []
    done = []
    for exp in exps:
        if args.resume:
            for plan in resume_plan(experiment_dir(exp, args.storage_path), move_incomplete=True):
                for moved in plan.moved_aside:
                    print(
                        f"[{exp.name}] resume: {plan.trial.name}/{moved.name.split('.')[0]} was "
                        f"never completed (its write was cut); moved aside to {moved}",
                        file=sys.stderr,
                    )
                line = plan.describe()
                print(
                    f"[{exp.name}] resume: {line}",
                    file=sys.stderr if line.startswith("WARNING") else sys.stdout,
                    flush=True,
                )
        try:
            summary = run_experiment(
                exp, as_test=args.as_test, storage_path=args.storage_path, resume=args.resume
            )
        except RunError as e:
            print(f"rllib-fair: error: {e}", file=sys.stderr)
            return 1
        for t in summary["trials"]:
            if t.get("error_full"):
                print(f"trial {t['trial']} failed:\n{t['error_full']}", file=sys.stderr)
        print_table(exp, summary)
        done.append((exp, summary))
        for path, why in (summary.get("manifest_errors") or {}).items():
            print(
                f"WARNING: checkpoint {path} has no manifest ({why}); it is checked by its "
                "structure only",
                file=sys.stderr,
            )
        if "interrupted" in summary:
            return _report_interrupt(args, exp, summary, exps)
        if any(t["error"] for t in summary["trials"]):
            code = 1
            from rllib_fair.cli.storage import disk_full_message

            full = disk_full_message(experiment_dir(exp, args.storage_path))
            if full:  # the cause of the trials' errors: say it last, in one line
                print(f"rllib-fair: error: {exp.name}: {full}", file=sys.stderr)
                return 1
        if args.as_test:
            ok, msg = check_pass(exp, summary)
            messages.append(msg)
            if not ok:
                code = 1
    if len(done) > 1:
        from rllib_fair.cli.runner import print_side_by_side

        print_side_by_side(done)
    for msg in messages:
        print(msg, file=sys.stdout if code == 0 else sys.stderr)
    return code


def _report_interrupt(args, exp, summary: dict, exps: list) -> int:
    """Says what an interrupted run kept and how to resume it; returns 130 or 143."""
    info = summary["interrupted"]
    print(f"\nrllib-fair: {exp.name}: interrupted by {info['signal']}", file=sys.stderr)
    for tid, (path, it) in sorted(info["saved"].items()):
        at = f"iteration {it}" if it is not None else "its last iteration"
        print(f"  trial {tid}: checkpointed at {at}: {path}", file=sys.stderr)
    for tid in info["unsaved"]:
        print(
            f"  trial {tid}: stopped without a new checkpoint; it resumes from its last one "
            "(or from iteration 1 if it had none)",
            file=sys.stderr,
        )
    rest = [e.name for e in exps[exps.index(exp) + 1 :]]
    if rest:
        print(f"  not started: {', '.join(rest)}", file=sys.stderr)
    cmd = f"rllib-fair train {args.file} --resume"
    if args.storage_path:
        cmd += f" --storage-path {args.storage_path}"
    print(f"resume with: {cmd}", file=sys.stderr, flush=True)
    return int(info["exit_code"])


def _num_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # no torch or a broken CUDA set-up: no GPUs
        return 0


def _error(message: str) -> int:
    print(f"rllib-fair: error: {message}", file=sys.stderr)
    return 2


def _cmd_evaluate(args) -> int:
    import json
    from pathlib import Path

    from rllib_fair.fairness.notions import get_notion

    for key, value in (("--steps", args.steps), ("--seeds", args.seeds), ("--window", args.window)):
        if value is not None and value < 1:
            return _error(f"{key}: {value} is invalid; valid: an integer >= 1")
    if args.notion is not None:
        try:
            get_notion(args.notion)
        except ValueError as e:
            return _error(f"--notion: {e}")
    from rllib_fair.cli.deploy import DeployError, locate_checkpoint

    try:
        checkpoint, why = locate_checkpoint(args.checkpoint)
    except DeployError as e:
        return _error(str(e))
    if args.json:
        folder = Path(args.json).expanduser().resolve().parent
        if not folder.is_dir():
            return _error(f"--json: folder {str(folder)!r} of {args.json!r} does not exist")
    import ray
    import torch

    from rllib_fair.cli.deploy import deploy, format_summary

    torch.set_num_threads(1)
    print(f"checkpoint: {checkpoint}")
    print(f"  why this one: {why}")
    if not ray.is_initialized():
        # Ray's own start-up, deprecation and monitoring notices are not about the
        # deployment: a private quiet instance, as for training.
        ray.init(
            address="local",
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    # RLlib keeps its own logger level (INFO); its "running <Algo> on the new API stack"
    # and deprecation notices concern the library, not this deployment.
    logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    try:
        runs, summary = deploy(
            str(checkpoint),
            steps=args.steps,
            seeds=args.seeds,
            window=args.window,
            notion=args.notion,
            explore=args.explore,
        )
    except DeployError as e:
        return _error(str(e))
    print(format_summary(summary))
    if args.json:
        payload = {
            "checkpoint": str(checkpoint),
            "chosen_because": why,
            "summary": summary,
            "runs": [r.__dict__ for r in runs],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rllib-fair`` console script."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "envs":
            return _cmd_envs()
        if args.command == "algos":
            return _cmd_algos()
        if args.command == "examples":
            return _cmd_examples()
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "evaluate":
            return _cmd_evaluate(args)
        return _cmd_train(args)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
