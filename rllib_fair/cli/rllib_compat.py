"""The classic ``rllib`` command line, for users who learned RLlib's tuned examples with it.

Ray 2.60 ships no ``rllib`` console script any more; this one accepts the classic
syntax and runs the same code paths as ``rllib-fair``:

    rllib train file FILE.yaml [--stop JSON] [--config JSON] [...]
    rllib train -f FILE.yaml ...                                 (older spelling)
    rllib train --algo PPO --env fair/Lending-v0 --stop '{"training_iteration": 5}'
                [--config '{"lr": 0.0003, "env_config": {"max_steps": 2000}}']
    rllib evaluate CHECKPOINT [--steps N] [--episodes N] [--explore]

Classic flags map onto ``rllib-fair train`` flags: ``--stop`` / ``--config`` JSON
objects become one ``--stop`` / ``--config key=value`` each, ``--storage-path`` (or the
older ``--local-dir``) the results folder, ``--ray-address`` ``--address``,
``--ray-num-cpus`` ``--num-cpus``, ``--checkpoint-freq`` / ``--checkpoint-at-end`` the
checkpoint settings, ``--num-samples`` the sample count; ``--framework`` must be
``torch``. If another installed distribution provides an ``rllib`` command (a future
Ray), this one refuses to run and says which to use.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml


def _error(message: str) -> int:
    print(f"rllib: error: {message}", file=sys.stderr)
    return 2


def other_rllib_provider() -> str | None:
    """Name of another installed distribution that declares an ``rllib`` console script."""
    from importlib.metadata import distributions

    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name in ("rllib-fair", "rllib_fair"):
            continue
        for ep in dist.entry_points:
            if ep.group == "console_scripts" and ep.name == "rllib":
                return dist.metadata["Name"]
    return None


def _json_object(flag: str, text: str | None) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = yaml.safe_load(text)  # '{lr: 0.001}' is fine too
        except yaml.YAMLError:
            value = None
    if not isinstance(value, dict):
        raise ValueError(f"{flag}: {text!r} is not a JSON object (e.g. '{{\"lr\": 0.0003}}')")
    return value


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = argparse.ArgumentParser(
        prog="rllib",
        description="RLlib's classic command line, run by rllib-fair (see rllib-fair --help).",
        formatter_class=fmt,
    )
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser(
        "train", help="train from a tuned-example file or --algo/--env", formatter_class=fmt
    )
    t.add_argument("what", nargs="*", help="'file FILE.yaml' (or FILE.yaml)")
    t.add_argument("-f", "--config-file", default=None, help="tuned-example YAML file")
    t.add_argument("--algo", "--run", dest="algo", default=None, help="algorithm name")
    t.add_argument("--env", default=None, help="registered env id")
    t.add_argument("--config", default=None, help="JSON object of config overrides")
    t.add_argument("--stop", default=None, help="JSON object of stop criteria")
    t.add_argument("--storage-path", "--local-dir", dest="storage_path", default=None)
    t.add_argument("--ray-address", default=None, help="Ray cluster address")
    t.add_argument("--ray-num-cpus", type=int, default=None, help="CPUs of a local Ray")
    t.add_argument("--checkpoint-freq", type=int, default=None)
    t.add_argument("--checkpoint-at-end", action="store_true")
    t.add_argument("--num-samples", type=int, default=None)
    t.add_argument("--framework", default="torch", help="only torch is supported")
    t.add_argument("--resume", action="store_true", help="continue an interrupted run")
    t.add_argument("--as-test", action="store_true", help="check the file's pass_criteria")
    t.add_argument("-v", "--verbose", action="count", default=0, help="accepted, ignored")
    e = sub.add_parser("evaluate", help="deploy a checkpoint", formatter_class=fmt)
    e.add_argument("checkpoint")
    e.add_argument("--steps", type=int, default=10_000, help="steps per deployment")
    e.add_argument("--episodes", type=int, default=10, help="deployments (seeds 0..N-1)")
    e.add_argument("--explore", action="store_true", help="sample actions instead of greedy")
    e.add_argument("--algo", "--run", dest="algo", default=None, help="accepted, ignored")
    e.add_argument("--env", default=None, help="accepted, ignored (the checkpoint's env)")
    e.add_argument("--out", dest="json", default=None, help="write the summary as JSON")
    return p


def _file_of(args) -> str | None:
    what = list(args.what)
    if what and what[0] == "file":
        what = what[1:]
    if len(what) > 1:
        raise ValueError(f"train: unexpected arguments {what[1:]!r}; usage: rllib train file FILE")
    if what and args.config_file:
        raise ValueError("train: give the file once (either 'file FILE' or -f FILE)")
    return what[0] if what else args.config_file


def translate_train(args, tmp: Path) -> list[str]:
    """The ``rllib-fair train`` argv for classic ``rllib train`` arguments."""
    if args.framework != "torch":
        raise ValueError(f"--framework: {args.framework!r} is invalid; valid choices: torch")
    stop = _json_object("--stop", args.stop)
    config = _json_object("--config", args.config)
    path = _file_of(args)
    if path is not None and (args.algo or args.env):
        raise ValueError("train: give either a file or --algo/--env, not both")
    needs_spec = path is None or args.checkpoint_freq is not None or args.checkpoint_at_end
    if path is None:
        if not args.algo or not args.env:
            raise ValueError(
                "train: give 'file FILE.yaml', or both --algo NAME and --env ID "
                "(see `rllib-fair algos` and `rllib-fair envs`)"
            )
        env_config = config.pop("env_config", {})
        spec = {"run": args.algo, "env": args.env, "env_config": env_config, "config": config}
        specs = {f"{args.algo}-{args.env.replace('/', '_')}": spec}
        config = {}
    elif needs_spec or args.num_samples is not None:
        from rllib_fair.cli.experiment_file import load_experiments

        specs = load_experiments(path)
    else:
        specs = None
    if specs is not None:
        for spec in specs.values():
            ckpt = dict(spec.get("checkpoint_config") or {})
            if args.checkpoint_freq is not None:
                ckpt["checkpoint_frequency"] = args.checkpoint_freq
            if args.checkpoint_at_end:
                ckpt["checkpoint_at_end"] = True
            if ckpt:
                spec["checkpoint_config"] = ckpt
            if args.num_samples is not None:
                spec["num_samples"] = args.num_samples
        path = str(tmp / "experiment.yaml")
        Path(path).write_text(yaml.safe_dump(specs, sort_keys=False))
    argv = ["train", path]
    for key, value in stop.items():
        argv += ["--stop", f"{key}={json.dumps(value)}"]
    for key, value in config.items():
        argv += ["--config", f"{key}={json.dumps(value)}"]
    if args.storage_path:
        argv += ["--storage-path", args.storage_path]
    if args.ray_address:
        argv += ["--address", args.ray_address]
    if args.ray_num_cpus is not None:
        argv += ["--num-cpus", str(args.ray_num_cpus)]
    if args.resume:
        argv.append("--resume")
    if args.as_test:
        argv.append("--as-test")
    return argv


def translate_evaluate(args) -> list[str]:
    """The ``rllib-fair evaluate`` argv for classic ``rllib evaluate`` arguments."""
    argv = ["evaluate", args.checkpoint, "--steps", str(args.steps), "--seeds", str(args.episodes)]
    if args.explore:
        argv.append("--explore")
    if args.json:
        argv += ["--json", args.json]
    return argv


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rllib`` console script."""
    other = other_rllib_provider()
    if other is not None:
        return _error(
            f"another installed package ({other}) also provides an `rllib` command; use "
            "`rllib-fair` (same features) or `python -m rllib_fair.cli.rllib_compat`"
        )
    args = _parser().parse_args(argv)
    from rllib_fair.cli import main as fair_main

    with tempfile.TemporaryDirectory(prefix="rllib-") as tmp:
        try:
            if args.command == "train":
                new = translate_train(args, Path(tmp))
            else:
                new = translate_evaluate(args)
        except ValueError as e:
            return _error(str(e).splitlines()[0])
        return fair_main(new)


if __name__ == "__main__":
    sys.exit(main())
