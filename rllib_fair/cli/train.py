"""``rllib-fair train FILE.yaml``: validate every experiment, lock its folder, run it.

Bad input (the file, an override, a flag, resources one trial can never get) exits 2
with one line before Ray starts or anything is written; a failed run or unmet
``--as-test`` criteria exit 1; an interrupt exits 130 (SIGINT) or 143 (SIGTERM) after
saying what was checkpointed and how to resume.
"""

from __future__ import annotations

import os
import sys

from rllib_fair.cli.parser import error


def cmd_train(args) -> int:
    """Runs ``rllib-fair train``; returns the exit code (module docstring)."""
    from rllib_fair.cli.experiment import ExperimentError, validate_experiment
    from rllib_fair.cli.experiment_file import load_experiments, parse_overrides

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
        return error(f"--num-cpus: {args.num_cpus} is invalid; valid: an integer >= 1")
    if address is not None and args.num_cpus is not None:
        return error(
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
                return error(problem)

    locks = [ExperimentLock(experiment_dir(exp, args.storage_path)) for exp in exps]
    try:
        for lock in locks:
            lock.acquire()
    except StorageError as e:
        for lock in locks:
            lock.release()
        return error(str(e))
    try:
        if args.resume:
            problem = _check_resume(args, exps)
            if problem:
                return error(problem)
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

    from rllib_fair.cli.report import check_pass, print_table
    from rllib_fair.cli.runner import RunError, check_resources, experiment_dir, run_experiment
    from rllib_fair.cli.storage import resume_plan

    torch.set_num_threads(1)
    if address is not None:  # also when this process already runs Ray (notebooks, tests)
        from rllib_fair.cli.connect import auth_problem

        problem = auth_problem(address)
        if problem:
            return error(problem)
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
            return error(f"--address: cannot connect to {address!r}: {text[0] if text else e}")
    if address is not None and not args.no_resource_check:
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        for exp in exps:
            problem = check_resources(exp, ray.cluster_resources(), nodes)
            if problem:
                return error(problem + " (an autoscaling cluster: pass --no-resource-check)")
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
        from rllib_fair.cli.report import print_side_by_side

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
