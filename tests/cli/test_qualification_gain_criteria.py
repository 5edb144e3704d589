"""Pass criteria and selection may name the qualification-gain block of LendingDrift runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllib_fair.cli.experiment import ExperimentError, load_experiments, validate_experiment

ROOT = Path(__file__).resolve().parents[2]


def _with(path: str, key: str):
    ((name, spec),) = load_experiments(ROOT / "tuned_examples" / path).items()
    spec = dict(spec)
    spec["pass_criteria"] = {**spec["pass_criteria"], key: {"max": 10.0}}
    return name, spec


@pytest.mark.parametrize(
    "key",
    [
        "fairness/qualification_gain/gain_gap_abs",
        "fairness/qualification_gain/dpe",
        "fairness/qualification_gain/shadow/spe",
        "fairness/qualification_gain/gain/disadvantaged",
    ],
)
def test_lending_drift_examples_accept_gain_keys(key):
    exp = validate_experiment(*_with("ppoc/lending_drift_s1-ppoc-fast.yaml", key))
    assert key in {c.metric for c in exp.pass_criteria}


@pytest.mark.parametrize(
    ("path", "key", "needle"),
    [
        (
            "ppoc/lending_drift_s1-ppoc-fast.yaml",
            "fairness/qualification_gain/gap",
            "not a qualification-gain metric; valid: fairness/qualification_gain/ followed by",
        ),
        (
            "ppoc/lending_drift_s1-ppoc-fast.yaml",
            "fairness/qualification_gain/gain/nobody",
            "gain/advantaged, gain/disadvantaged",
        ),
        (
            "pocar/lending-pocar.yaml",
            "fairness/qualification_gain/c_pi",
            "no qualification-gain metrics are reported for env 'fair/Lending-v0'",
        ),
    ],
)
def test_gain_keys_rejected_with_one_line(path, key, needle):
    with pytest.raises(ExperimentError) as err:
        validate_experiment(*_with(path, key))
    assert needle in str(err.value) and "\n" not in str(err.value)
