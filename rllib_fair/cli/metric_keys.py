"""Result keys an experiment file names: checked against what its trials will report.

``fairness/...`` keys (also under ``evaluation/``) are checked against the notions,
groups and selective-labels block the configs log; ``fairness/qualification_gain/...``
against the envs that emit qualification gains; every other key against the result keys
the algorithm and the env declare (``REPORTED_KEYS``, see :mod:`rllib_fair.settings`).
"""

from __future__ import annotations

import difflib

from rllib_fair.cli.result_keys import ExperimentError


def _fairness_forms(cfg, notion: str, groups: list[str] | None) -> list[tuple[str, ...]]:
    """Every key tail ``fairness/<notion>/...`` reports (``""``: any group name)."""
    from rllib_fair.fairness.notions import get_notion
    from rllib_fair.rllib import keys
    from rllib_fair.rllib.callbacks import _selective_notion

    names = list(groups) if groups is not None else [""]
    forms: list[tuple[str, ...]] = [
        (k,)
        for k in (
            keys.BIAS,
            keys.RATIO,
            keys.STEP_DISPARITY_MEAN,
            keys.EPISODE_BIAS_MEAN,
            keys.NUM_STEPS,
            keys.NUM_EPISODES,
        )
    ]
    pairs = get_notion(notion).pair_names
    for what in (keys.RATE, keys.SUPPLY, keys.DEMAND):
        for g in names:
            if len(pairs) == 1:
                forms.append((what, g))
            else:
                forms.extend((what, pair, g) for pair in pairs)
    if notion == _selective_notion(cfg):
        predicts = bool(getattr(cfg, "provides_label_predictions", False))
        sources = ("true", "accepted") + (("imputed",) if predicts else ())
        forms.extend((keys.SELECTIVE, f"{s}_disparity_mean") for s in sources)
        per_group = ("rejection_rate",) + (("predictor_error",) if predicts else ())
        for what in per_group:
            forms.extend((keys.SELECTIVE, what, g) for g in names[:2])
    return forms


def _describe_forms(forms: list[tuple[str, ...]], groups: list[str] | None) -> str:
    shown: list[str] = []
    for form in forms:
        text = (
            "/".join(form[:-1] + ("<group>",))
            if len(form) > 1 and (groups is None or form[-1] in groups)
            else "/".join(form)
        )
        if text not in shown:
            shown.append(text)
    where = f" with <group> in {', '.join(groups)}" if groups is not None else ""
    return ", ".join(shown) + where


def reported_patterns(cfg) -> tuple[str, ...]:
    """Result keys (glob patterns) ``cfg``'s algorithm reports on its env, fairness/ aside.

    The algorithm's ``REPORTED_KEYS`` (along its config class's bases: RLlib's env-runner
    and perf keys, its learners' keys, its own namespace) and the env class's.
    """
    from rllib_fair.envs import ENV_IDS, env_class
    from rllib_fair.settings import reported_keys

    classes = [type(cfg)]
    if isinstance(cfg.env, str) and cfg.env in ENV_IDS:
        classes.append(env_class(cfg.env))
    return reported_keys(*classes)


def _check_reported_key(section: str, key: str, cfgs: list) -> None:
    """A key outside ``fairness/`` must be one the configured algorithm and env report."""
    from rllib_fair.settings import matches

    tail = key[len("evaluation/") :] if key.startswith("evaluation/") else key
    for cfg in cfgs:
        where = f"{_run_name(cfg)} on {cfg.env}"
        if key.startswith("evaluation/") and not cfg.evaluation_interval:
            raise ExperimentError(
                f"{section}.{key}: no evaluation is configured, so no evaluation/ keys are "
                "reported; valid: set evaluation_interval (>= 1), or use the key without "
                "evaluation/"
            )
        patterns = reported_patterns(cfg)
        if matches(tail, patterns):
            continue
        named = (k.replace("learners/*/", f"learners/{DEFAULT_MODULE}/", 1) for k in patterns)
        concrete = [k for k in named if "*" not in k]
        close = difflib.get_close_matches(tail, concrete, n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ExperimentError(
            f"{section}.{key}: {where} never reports this key{hint}; valid: a key it reports "
            f"(docs/settings.md lists them), e.g. {RETURN_KEY}"
        )


def _run_name(cfg) -> str:
    """The registered name of ``cfg``'s algorithm (its class name if unregistered)."""
    from rllib_fair.algorithms import ALGORITHMS

    name = type(cfg).__name__
    for run, spec in ALGORITHMS.items():
        if spec.config_class == name and type(cfg).__module__ == spec.module:
            return run
    return name


#: RLlib's module id of a single-agent algorithm (what ``learners/*/`` stands for).
DEFAULT_MODULE = "default_policy"

#: The env's return, the key most criteria use.
RETURN_KEY = "env_runners/episode_return_mean"


def check_metric_key(section: str, key: str, cfgs: list, groups: list[str] | None) -> None:
    """The key must be one a trial of these configs reports.

    ``fairness/...`` keys (also under ``evaluation/``) are checked against the notions,
    groups and selective-labels block the configs log; every other key against the result
    keys the algorithm and env declare (:func:`reported_patterns`).
    """
    tail = key[len("evaluation/") :] if key.startswith("evaluation/") else key
    if not tail.startswith("fairness/"):
        _check_reported_key(section, key, cfgs)
        return
    parts = tuple(tail.split("/")[1:])
    if parts[:1] == ("qualification_gain",):
        _check_qualification_gain_key(section, key, parts[1:], cfgs, groups)
        return
    for cfg in cfgs:
        notions = cfg.fairness_notions_to_log() if cfg.fairness_metrics else []
        if not notions:
            raise ExperimentError(
                f"{section}.{key}: no fairness metrics are reported (fairness_metrics is "
                "false); valid: set fairness_metrics: true, or use a key outside fairness/"
            )
        notion = parts[0] if parts else ""
        if notion not in notions:
            raise ExperimentError(
                f"{section}.{key}: notion {notion!r} is not reported by this config; valid "
                f"notions: {', '.join(notions)} (fairness_notion plus fairness_log_notions)"
            )
        forms = _fairness_forms(cfg, notion, groups)
        rest = parts[1:]
        if not any(
            len(f) == len(rest) and all(a == b or a == "" for a, b in zip(f, rest)) for f in forms
        ):
            raise ExperimentError(
                f"{section}.{key}: not a metric of notion {notion!r}; valid: fairness/{notion}/ "
                f"followed by one of {_describe_forms(forms, groups)}"
            )


#: Keys of the ``fairness/qualification_gain`` block (``callbacks.summarize_qualification``).
_QG_TERMS = ("c_pi", "dpe", "ipe", "spe")
_QG_VARIANTS = ("reference", "shadow", "exact")


def _check_qualification_gain_key(
    section: str, key: str, rest: tuple, cfgs: list, groups: list[str] | None
) -> None:
    """``fairness/qualification_gain/...`` exists only for envs that emit qualification gains."""
    from rllib_fair.algorithms.ppoc.ppoc import emits_qualification_info

    for cfg in cfgs:
        if not (cfg.fairness_metrics and emits_qualification_info(cfg.env)):
            raise ExperimentError(
                f"{section}.{key}: no qualification-gain metrics are reported for env "
                f"{cfg.env!r}; valid: an env that reports qualification gains "
                "(fair/LendingDrift-v0) with fairness_metrics: true"
            )
    forms = [(t,) for t in (*_QG_TERMS, "gain_gap_abs", "num_episodes")]
    forms += [(v, t) for v in _QG_VARIANTS for t in _QG_TERMS]
    forms += [("gain", g) for g in (groups or [""])]
    if not any(
        len(f) == len(rest) and all(a == b or a == "" for a, b in zip(f, rest)) for f in forms
    ):
        shown = ", ".join("/".join(f) if f[-1] else f"{f[0]}/<group>" for f in forms)
        raise ExperimentError(
            f"{section}.{key}: not a qualification-gain metric; valid: "
            f"fairness/qualification_gain/ followed by one of {shown}"
        )
