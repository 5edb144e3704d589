"""Command line: ``rllib-fair train FILE.yaml``, ``evaluate``, ``reproduce PLAN``, ``compare``...

Exit codes: 0 success; 1 a run failed or ``--as-test`` criteria were not met;
2 bad input (one line on stderr naming the key, the bad value and the valid choices,
and nothing written).

The subcommands live in their own modules: the parser in :mod:`rllib_fair.cli.parser`,
``train`` in :mod:`rllib_fair.cli.train`, the others in :mod:`rllib_fair.cli.commands`.
"""

from __future__ import annotations

import sys

from rllib_fair.cli.commands import cmd_algos, cmd_compare, cmd_envs, cmd_evaluate, cmd_examples
from rllib_fair.cli.parser import build_parser
from rllib_fair.cli.train import cmd_train


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rllib-fair`` console script."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "envs":
            return cmd_envs()
        if args.command == "algos":
            return cmd_algos()
        if args.command == "examples":
            return cmd_examples()
        if args.command == "compare":
            return cmd_compare(args)
        if args.command == "evaluate":
            return cmd_evaluate(args)
        if args.command == "reproduce":
            from rllib_fair.cli.reproduce import cmd_reproduce

            return cmd_reproduce(args)
        return cmd_train(args)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
