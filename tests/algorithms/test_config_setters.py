"""One config-setter style: RLlib's explicit ``NotProvided`` keywords plus ``set_provided``.

Every setting an algorithm config declares is a keyword-only argument of a ``training()``
along its class hierarchy, defaulting to ``NotProvided`` (so signatures and docs show it),
and ``training(name=value)`` sets exactly that attribute on every registered config.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from ray.rllib.algorithms.algorithm_config import NotProvided

from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.algorithms.common.setters import set_provided

torch.set_num_threads(1)


class _Config:
    def __init__(self):
        self.alpha = 1.0
        self.beta = "a"


def test_set_provided_sets_only_provided_values_and_returns_the_config():
    cfg = _Config()
    assert set_provided(cfg, alpha=2.0, beta=NotProvided) is cfg
    assert (cfg.alpha, cfg.beta) == (2.0, "a")
    assert set_provided(cfg, beta=None).beta is None  # None is a value, not "not provided"


def test_set_provided_rejects_a_name_the_config_does_not_define():
    with pytest.raises(AttributeError, match="_Config has no setting 'gamma'"):
        set_provided(_Config(), gamma=1)


def _algorithm_settings(cls) -> list[str]:
    """Settings the algorithm classes of ``cls``'s hierarchy declare (the shared fairness
    settings have their own setter, ``fairness()``)."""
    names = []
    for klass in cls.__mro__:
        if klass.__module__.startswith("rllib_fair.algorithms."):
            names += [s.name for s in vars(klass).get("DECLARED_SETTINGS", ())]
    return sorted(set(names))


def _training_keywords(cls) -> dict[str, inspect.Parameter]:
    """Keyword-only parameters of every ``training()`` along ``cls``'s hierarchy."""
    out: dict[str, inspect.Parameter] = {}
    for klass in reversed(cls.__mro__):
        fn = vars(klass).get("training")
        if fn is None:
            continue
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind is p.KEYWORD_ONLY:
                out[name] = p
    return out


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_training_names_every_declared_setting(name):
    cls = get_config_class(name)
    keywords = _training_keywords(cls)
    bad = [
        n
        for n in _algorithm_settings(cls)
        if n not in keywords or keywords[n].default is not NotProvided
    ]
    assert not bad, f"{name}: not an explicit NotProvided keyword of training(): {bad}"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_training_sets_every_declared_setting_and_leaves_the_rest(name):
    cls = get_config_class(name)
    settings = _algorithm_settings(cls)
    untouched = cls()
    before = {n: getattr(untouched, n) for n in settings}
    untouched.training()
    assert {n: getattr(untouched, n) for n in settings} == before
    values = {n: object() for n in settings}
    cfg = cls().training(gamma=0.5, **values)
    assert cfg.gamma == 0.5  # RLlib's own keywords still reach RLlib's training()
    assert all(getattr(cfg, n) is v for n, v in values.items())
