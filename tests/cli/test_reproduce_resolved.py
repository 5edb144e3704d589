"""A cell's record of the package's defaults (``resolved``) and the staleness it decides.

A plan cell runs on its tuned example and the plan's overrides (its ``setup``) and on the
defaults of the package's config classes and envs, which neither names. The runner
records what the built config resolved those to; a changed default makes the cells run
before it stale, so they rerun instead of mixing into a table with newer cells.
"""

from __future__ import annotations

import json

import torch

from rllib_fair.algorithms.pocar.pocar import POCARConfig
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.algorithms.ppoc.ppoc import PPOCConfig
from rllib_fair.cli.reproduce import cell_config, with_resolver
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.reproduce.merge import cell_path, current, finished, read_cells
from rllib_fair.reproduce.plan import Cell, parse_plan
from rllib_fair.reproduce.resolved import RESOURCE_KEYS, package_keys, resolved_settings
from rllib_fair.reproduce.sharing import schedule

from .test_reproduce import TINY
from .test_reproduce_sharing import _put, _row, _shared

torch.set_num_threads(1)


def test_the_record_holds_the_packages_defaults_and_the_envs_parameters():
    plan = parse_plan(TINY)
    config, _, _ = cell_config(plan, Cell("pocar", "lending", 1))
    record = resolved_settings(config)
    # POCAR's own settings at their defaults (the tuned example sets beta_1 itself)
    assert record["config"]["beta_0"] == config.beta_0 == 1.0
    assert record["config"]["adam_epsilon"] == 1e-5
    assert record["config"]["advantage_normalization"] == "minmax"
    assert record["config"]["weight_init"] == "rllib"  # declared by the PPO base
    # the env's constructor defaults, with the plan's env_config over them
    assert record["env"]["max_steps"] == 100  # plan: 100 (the constructor says 2,000)
    assert record["env"]["interest_rate"] == 1.0 and record["env"]["obs_tpr"] is True
    # RLlib's own defaults, resources and the seed are not part of it
    assert not set(record["config"]) & (RESOURCE_KEYS | {"lr", "gamma", "clip_param"})
    # the seed does not change the record; the method does
    other_seed, _, _ = cell_config(plan, Cell("pocar", "lending", 0))
    assert resolved_settings(other_seed) == record
    ppo, _, _ = cell_config(plan, Cell("ppo", "lending", 1))
    assert "beta_0" not in resolved_settings(ppo)["config"]
    json.dumps(record)  # JSON types throughout


def test_an_rllib_setting_the_package_changes_is_part_of_it():
    # PPO-C's config sets kl_coeff, grad_clip and the batch mode; FairPPO changes none
    assert {"kl_coeff", "grad_clip", "batch_mode", "beta_c"} <= set(package_keys(PPOCConfig))
    assert not {"kl_coeff", "grad_clip", "batch_mode"} & set(package_keys(FairPPOConfig))
    assert "optimizer_impl" in package_keys(FairPPOConfig)


def _cells_with_records(tmp_path, plan):
    resolving = with_resolver(plan)
    for cell in plan.cells():
        row = {**_row(plan, cell, None), "resolved": resolving.resolver(cell)}
        _put(tmp_path, plan, row)


def test_a_changed_package_default_makes_the_cells_run_before_it_stale(tmp_path, monkeypatch):
    plan = parse_plan(TINY)
    _cells_with_records(tmp_path, plan)
    assert all(finished(tmp_path, with_resolver(plan), c) for c in plan.cells())
    # POCAR's default Adam epsilon changes: its cells rerun, PPO's do not
    original = POCARConfig.__init__

    def changed(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.adam_epsilon = 1e-8

    monkeypatch.setattr(POCARConfig, "__init__", changed)
    resolving = with_resolver(plan)
    assert [c.method for c in plan.cells() if not finished(tmp_path, resolving, c)] == [
        "pocar",
        "pocar",
    ]
    rows, stale = read_cells(tmp_path, resolving)
    assert stale == 2 and {r["cell"]["method"] for r in rows} == {"ppo"}
    # without a resolver (a merge that cannot build configs) the setup alone decides
    assert read_cells(tmp_path, plan) == (read_cells(tmp_path, plan)[0], 0)
    monkeypatch.setattr(POCARConfig, "__init__", original)
    assert read_cells(tmp_path, with_resolver(plan))[1] == 0


def test_a_changed_env_default_makes_every_cell_on_it_stale(tmp_path, monkeypatch):
    plan = parse_plan(TINY)
    _cells_with_records(tmp_path, plan)
    defaults = LendingEnv.__init__.__defaults__
    names = LendingEnv.__init__.__code__.co_varnames[1 : 1 + len(defaults)]
    changed = tuple(0.5 if n == "interest_rate" else d for n, d in zip(names, defaults))
    monkeypatch.setattr(LendingEnv.__init__, "__defaults__", changed)
    assert read_cells(tmp_path, with_resolver(plan))[1] == 4
    # a default the plan overrides anyway changes nothing (max_steps: 100 in the plan)
    changed = tuple(7 if n == "max_steps" else d for n, d in zip(names, defaults))
    monkeypatch.setattr(LendingEnv.__init__, "__defaults__", changed)
    assert read_cells(tmp_path, with_resolver(plan))[1] == 0


def test_a_cell_whose_config_no_longer_builds_is_stale(tmp_path, monkeypatch):
    import rllib_fair.cli.reproduce as runner

    plan = parse_plan(TINY)
    cell = Cell("ppo", "lending", 0)
    row = {**_row(plan, cell, None), "resolved": with_resolver(plan).resolver(cell)}
    assert current(row, with_resolver(plan), cell)

    def fails(*args, **kwargs):
        raise ValueError("minibatch_size: -3 is invalid; valid: an integer >= 1")

    monkeypatch.setattr(runner, "cell_config", fails)
    resolving = with_resolver(plan)
    assert resolving.resolver(cell) is None and not current(row, resolving, cell)


def test_a_copied_grid_point_records_its_own_values(tmp_path):
    plan = with_resolver(parse_plan(_shared()))
    first = Cell("pocar", "fico_eo", 0, "beta_1-1")
    proof = {**_row(plan, first, 0.0, keys=("beta_1",)), "resolved": plan.resolver(first)}
    _put(tmp_path, plan, proof)
    _, _, copies = schedule(tmp_path, plan, [Cell("pocar", "fico_eo", 0, "beta_1-10")])
    (copy,) = copies
    assert proof["resolved"]["config"]["beta_1"] == 1
    assert copy["resolved"]["config"]["beta_1"] == 10
    assert copy["resolved"] == plan.resolver(Cell("pocar", "fico_eo", 0, "beta_1-10"))
    path = cell_path(tmp_path, plan, Cell(**copy["cell"]))
    path.write_text(json.dumps(copy))
    assert finished(tmp_path, plan, Cell(**copy["cell"]))


def test_a_setting_added_since_counts_at_the_value_that_reproduces_the_old_run(tmp_path):
    """ELBERT-PO's standardize_fair_advantage (2026-11-29): the paper form ran as 'auto'
    does now, the reference form as 'always' (no longer its default): only the latter
    reruns."""
    from rllib_fair.algorithms.elbertpo.elbertpo import ELBERTPOConfig
    from rllib_fair.reproduce.resolved import added_settings, upgraded

    shared = {"fairness_undefined_utility"}  # every algorithm's (2026-12-02)
    assert set(added_settings(ELBERTPOConfig)) == {"standardize_fair_advantage"} | shared
    assert set(added_settings(POCARConfig)) == shared
    tiny = {
        **TINY,
        "methods": {**TINY["methods"], "elbertpo": {"label": "ELBERT-PO"}},
    }
    for form, rerun in (("paper", False), ("reference", True)):
        lending = {**TINY["settings"]["lending"]}
        lending["config"] = {**lending["config"], "advantage_form": form}
        plan = with_resolver(parse_plan({**tiny, "settings": {"lending": lending}}))
        cell = Cell("elbertpo", "lending", 0)
        now = plan.resolver(cell)
        assert now["config"]["standardize_fair_advantage"] == "auto"
        before = {**now, "config": dict(now["config"])}
        del before["config"]["standardize_fair_advantage"]  # a record written before
        row = {**_row(plan, cell, None), "resolved": before}
        assert current(row, plan, cell) is not rerun, form
        assert upgraded(before, ELBERTPOConfig)["config"]["standardize_fair_advantage"] == (
            "always" if rerun else "auto"
        )
        # a record that has the setting is compared as it is
        assert current({**row, "resolved": now}, plan, cell)
        other = {**now, "config": {**now["config"], "standardize_fair_advantage": "never"}}
        assert not current({**row, "resolved": other}, plan, cell)


def test_records_from_before_the_undefined_utility_rule_ran_under_exclude():
    """fairness_undefined_utility (2026-12-02): a record without it ran as 'exclude' does:
    it stays current under the default and is stale where a plan asks for 'zero'."""
    from rllib_fair.reproduce.resolved import upgraded

    cell = Cell("pocar", "lending", 0)
    for rule, rerun in (("exclude", False), ("zero", True)):
        lending = {**TINY["settings"]["lending"]}
        lending["config"] = {**lending["config"], "fairness_undefined_utility": rule}
        plan = with_resolver(parse_plan({**TINY, "settings": {"lending": lending}}))
        now = plan.resolver(cell)
        assert now["config"]["fairness_undefined_utility"] == rule
        before = {**now, "config": dict(now["config"])}
        del before["config"]["fairness_undefined_utility"]
        assert upgraded(before, POCARConfig)["config"]["fairness_undefined_utility"] == "exclude"
        row = {**_row(plan, cell, None), "resolved": before}
        assert current(row, plan, cell) is not rerun, rule
