"""The ``rllib-fair`` argument parser: subcommands, flags and one-line usage errors.

A bad flag exits 2 with one line on stderr (``rllib-fair: error: ...``) naming the
flag, the bad value and what is valid, like every bad input of the command line
(:func:`error`).
"""

from __future__ import annotations

import argparse
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


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand and flag."""
    fmt = _HelpFormatter
    p = _Parser(
        prog="rllib-fair",
        description="Long-term fairness experiments on Ray RLlib.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
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
    r = sub.add_parser(
        "reproduce",
        help="run a reproduction plan's cells as Tune trials, then merge its tables and claims",
        formatter_class=fmt,
    )
    r.add_argument(
        "plan",
        help="a shipped plan's name, a plan YAML file, or 'list' (every shipped plan with "
        "its finished cells and CPU-hours under --out)",
    )
    r.add_argument(
        "--out",
        default=None,
        help="results folder (default: docs/results/campaign of this checkout)",
    )
    r.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds (default: the plan's)")
    r.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="run only these of the plan's methods (default: all; the merge covers every cell)",
    )
    r.add_argument(
        "--settings",
        nargs="+",
        default=None,
        help="run only these of the plan's settings (default: all)",
    )
    r.add_argument(
        "--budget", type=int, default=None, help="env steps per cell (default: the plan's)"
    )
    r.add_argument("--address", default=None, help="Ray cluster address (default: local Ray)")
    r.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray")
    r.add_argument(
        "--max-concurrent", type=int, default=None, help="cells running at once (default: fit)"
    )
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue a campaign (finished cells are always skipped; this says so)",
    )
    r.add_argument("--merge-only", action="store_true", help="merge finished cells, run nothing")
    r.add_argument("--storage-path", default=None, help="Tune's folder (default: ~/ray_results)")
    r.add_argument("--no-plots", action="store_true", help="tables only")
    sub.add_parser("envs", help="list the registered environments")
    sub.add_parser("algos", help="list the registered algorithms")
    sub.add_parser("examples", help="list the tuned-example YAML files of this checkout")
    return p


def version() -> str:
    """The installed package's version (or a note that it is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("rllib-fair")
    except PackageNotFoundError:
        return "unknown (not installed)"


def error(message: str) -> int:
    """Prints ``rllib-fair: error: <message>`` (one line) on stderr; returns exit code 2."""
    print(f"rllib-fair: error: {message}", file=sys.stderr)
    return 2
