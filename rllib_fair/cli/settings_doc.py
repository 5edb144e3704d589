"""Writes ``docs/settings.md`` from the declarations (:mod:`rllib_fair.settings`).

The reference lists every setting of every registered algorithm and environment (type,
what is valid, default, meaning), the rules over several settings and the result keys
each algorithm and env reports, all read from the same declarations the checks use::

    python -m rllib_fair.cli.settings_doc            # print
    python -m rllib_fair.cli.settings_doc --write    # write docs/settings.md

``tests/cli/test_declared_settings.py`` keeps the committed file equal to :func:`render`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rllib_fair.settings import RLLIB_SETTINGS, Rule, Setting, collect, own_settings, show

#: Where the reference lives in a checkout.
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def _plain(value: Any) -> Any:
    """Tuples as lists, recursively (the YAML form of a default)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return show(_plain(value))


def _table(settings: list[Setting], defaults: dict[str, Any] | None) -> list[str]:
    head = "| setting | type | valid | default | meaning |"
    rule = "|---|---|---|---|---|"
    rows = [head, rule]
    for s in settings:
        if defaults is None:
            default = "the algorithm's"
        else:
            default = _default(defaults[s.name]) if s.name in defaults else ""
        valid = s.valid_text()
        rows.append(
            f"| `{s.name}` | {_cell(s.type_text())} | {_cell(valid)} | {_cell(default)} | "
            f"{_cell(s.meaning)} |"
        )
    return rows


def _rules(rules: tuple[Rule, ...]) -> list[str]:
    if not rules:
        return []
    out = ["", "Rules over several settings:", ""]
    for r in rules:
        out.append(f"- `{r.name}` ({', '.join(f'`{k}`' for k in r.keys)}): {r.meaning}")
    return out


def _keys(patterns: tuple[str, ...], title: str) -> list[str]:
    if not patterns:
        return []
    shown = ", ".join(f"`{p}`" for p in patterns)
    return ["", f"{title}: {shown}"]


def render() -> str:
    """The whole reference, as Markdown."""
    from rllib_fair.algorithms import ALGORITHMS, get_config_class
    from rllib_fair.cli.config_build import CONFIG_TRANSLATIONS
    from rllib_fair.envs import ENV_IDS, env_class, env_info
    from rllib_fair.envs.declared import env_declarations
    from rllib_fair.rllib.config import FairnessConfigMixin
    from rllib_fair.settings import LEARNER_REPORTED_KEYS, RLLIB_REPORTED_KEYS

    shared = own_settings(FairnessConfigMixin)
    shared_names = {s.name for s in shared}
    yaml_keys = {attr: key for key, attr in CONFIG_TRANSLATIONS.items()}
    lines = [
        "# Settings reference",
        "",
        "Generated from the declarations in the code by "
        "`python -m rllib_fair.cli.settings_doc --write`; a test keeps this file equal to "
        "the generated text. `rllib-fair train` checks every value below before anything "
        "runs (no Ray, nothing written): a bad one stops it with one line naming the key, "
        "the value and what is valid. An algorithm config's `validate()` checks the same "
        "declarations from Python.",
        "",
        "Types: `float` also takes integers; `null` is YAML's null (Python's None); a "
        "`schedule` is RLlib's `[[timestep, value], ...]`. Result keys are patterns: `*` "
        "stands for one level of the key (a module id such as `default_policy`, an agent "
        "id, a timer name), `**` for any deeper keys. `fairness/...` keys are checked "
        "separately (the notions, groups and blocks the configuration logs).",
        "",
        "## Settings every algorithm has",
        "",
        "### Fairness settings",
        "",
        "Declared once for every algorithm (`FairnessConfigMixin`); an algorithm whose "
        "default differs says so in its section.",
        "",
    ]
    base_defaults = {s.name: getattr(get_config_class("PPO")(), s.name) for s in shared}
    lines += _table(list(shared), base_defaults)
    lines += [
        "",
        "### RLlib settings the command line checks",
        "",
        "Their defaults are the algorithm's (RLlib's, or the algorithm's own where its "
        "section says so). YAML keys: "
        + ", ".join(
            f"`{k}` for `{a}`"
            for a, k in sorted(yaml_keys.items())
            if a in {s.name for s in RLLIB_SETTINGS}
        )
        + ".",
        "",
    ]
    lines += _table(list(RLLIB_SETTINGS), None)
    lines += [
        "",
        "### Result keys every algorithm reports",
        "",
        ", ".join(f"`{p}`" for p in RLLIB_REPORTED_KEYS),
        "",
        "Algorithms whose learners train also report: "
        + ", ".join(f"`{p}`" for p in LEARNER_REPORTED_KEYS),
        "",
        "## Algorithms",
    ]
    base_rllib = {s.name for s in RLLIB_SETTINGS}
    ppo_cfg = get_config_class("PPO")()
    for run, spec in ALGORITHMS.items():
        cls = get_config_class(run)
        cfg = cls()
        settings, rules = collect(cls)
        own = [s for n, s in settings.items() if n not in shared_names]
        defaults = {n: getattr(cfg, n) for n in settings}
        lines += ["", f"### {run}", "", f"`{spec.module}.{spec.config_class}`: {spec.paper}."]
        if spec.variant_of:
            lines += ["", f"A variant of {spec.variant_of} (same classes, other defaults)."]
        lines += [""]
        lines += _table(own, defaults) if own else ["No settings of its own."]
        changed = [
            f"`{n}` = {_default(defaults[n])}"
            for n in sorted(shared_names)
            if _plain(defaults[n]) != _plain(base_defaults[n])
        ]
        changed += [
            f"`{yaml_keys.get(n, n)}` = {_default(getattr(cfg, n))}"
            for n in sorted(base_rllib)
            if hasattr(cfg, n)
            and type(cfg) is not type(ppo_cfg)
            and isinstance(cfg, type(ppo_cfg))
            and _plain(getattr(cfg, n)) != _plain(getattr(ppo_cfg, n))
        ]
        if changed:
            lines += ["", "Defaults that differ from PPO's here: " + ", ".join(changed) + "."]
        lines += _rules(rules)
        own_keys = tuple(
            k
            for k in _own_reported(cls)
            if k not in RLLIB_REPORTED_KEYS and k not in LEARNER_REPORTED_KEYS
        )
        learns = any(k in LEARNER_REPORTED_KEYS for k in _own_reported(cls))
        lines += _keys(
            own_keys,
            "Result keys it adds" + (" (besides the learner keys)" if learns else ""),
        )
    lines += ["", "## Environments"]
    for env_id in ENV_IDS:
        settings, rules, defaults = env_declarations(env_id)
        info = env_info(env_id)
        lines += [
            "",
            f"### {env_id}",
            "",
            f"`{info['class']}`: {info['description']}. Groups: "
            f"{', '.join(info['group_names'])}; notions: {', '.join(info['supported_notions'])} "
            f"(default {info['default_notion']}).",
            "",
        ]
        lines += _table(list(settings.values()), defaults)
        lines += _rules(rules)
        lines += _keys(
            tuple(getattr(env_class(env_id), "REPORTED_KEYS", ())), "Result keys it adds"
        )
    return "\n".join(lines) + "\n"


def _own_reported(cls: type) -> tuple[str, ...]:
    from rllib_fair.settings import reported_keys

    return reported_keys(cls)


def main(argv: list[str] | None = None) -> int:
    """Prints the reference, or writes it to ``docs/settings.md`` with ``--write``."""
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if argv == ["--write"]:
        DOC_PATH.write_text(text)
        print(f"written: {DOC_PATH}")
    elif not argv:
        sys.stdout.write(text)
    else:
        print("usage: python -m rllib_fair.cli.settings_doc [--write]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
