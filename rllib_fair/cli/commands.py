"""The small subcommands: ``envs``, ``algos``, ``examples``, ``compare`` and ``evaluate``.

Each returns the exit code (0, or 2 with one error line for bad input); ``train`` is
:mod:`rllib_fair.cli.train`.
"""

from __future__ import annotations

import logging
import sys

from rllib_fair.cli.parser import error


def cmd_compare(args) -> int:
    """``rllib-fair compare``: the table, notes, files and figures of finished runs."""
    from pathlib import Path

    from rllib_fair.cli.compare import CompareError, compare

    if args.last < 1:
        return error(f"--last: {args.last} is invalid; valid: an integer >= 1")
    first = Path(args.results[0])
    # a CSV's own folder may be a tracked one (docs/results/): its summary goes under
    # ./results, which the storage default already uses
    out = args.out or str(
        Path("results") / f"compare_{first.stem}" if first.suffix == ".csv" else first / "compare"
    )
    try:
        result = compare(args.results, out, last=args.last, plots=not args.no_plots)
    except CompareError as e:
        return error(str(e))
    print(result["table"])
    for block in (result["legend"], *result["notes"]):
        if block:
            print(f"\n{block}")
    print(f"\nwritten: {', '.join(result['files'])}")
    for fig in result["figures"]:
        print(f"figure:  {fig}")
    return 0


def cmd_examples() -> int:
    """``rllib-fair examples``: the tuned-example files of this checkout."""
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


def cmd_envs() -> int:
    """``rllib-fair envs``: the registered environments, their groups and notions."""
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


def cmd_algos() -> int:
    """``rllib-fair algos``: the registered algorithms and their papers."""
    from rllib_fair.algorithms import ALGORITHMS

    width = max(len(name) for name in ALGORITHMS)
    for name, spec in sorted(ALGORITHMS.items()):
        print(f"{name:<{width}}  {spec.module}.{spec.algo_class}")
        print(f"{'':<{width}}  {spec.paper}")
    return 0


def cmd_evaluate(args) -> int:
    """``rllib-fair evaluate``: deploys a checkpoint for N steps on several seeds."""
    import json
    from pathlib import Path

    from rllib_fair.fairness.notions import get_notion

    for key, value in (("--steps", args.steps), ("--seeds", args.seeds), ("--window", args.window)):
        if value is not None and value < 1:
            return error(f"{key}: {value} is invalid; valid: an integer >= 1")
    if args.notion is not None:
        try:
            get_notion(args.notion)
        except ValueError as e:
            return error(f"--notion: {e}")
    from rllib_fair.cli.deploy import DeployError, locate_checkpoint

    try:
        checkpoint, why = locate_checkpoint(args.checkpoint)
    except DeployError as e:
        return error(str(e))
    if args.json:
        folder = Path(args.json).expanduser().resolve().parent
        if not folder.is_dir():
            return error(f"--json: folder {str(folder)!r} of {args.json!r} does not exist")
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
        return error(str(e))
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
