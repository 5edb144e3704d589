import pickle

import numpy as np
import pytest

from rllib_fair.fairness import NOTIONS, Notion, get_notion, list_notions
from rllib_fair.fairness.counts import (
    ALLOCATED,
    DECIDED,
    NEEDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)


def make_counts() -> np.ndarray:
    """Two groups; column 0 and column 1 are hand-picked."""
    counts = np.zeros((NUM_FIELDS, 2))
    counts[DECIDED] = [10, 8]
    counts[QUALIFIED] = [6, 2]
    counts[SELECTED] = [5, 3]
    counts[SELECTED_QUALIFIED] = [4, 1]
    counts[POPULATION] = [100, 50]
    counts[QUALIFIED_MASS] = [40, 30]
    counts[ALLOCATED] = [2, 5]
    counts[NEEDED] = [9, 4]
    return counts


# Hand-computed (supply, demand) per notion for make_counts(), one row per pair.
EXPECTED = {
    "demographic_parity": ([[5, 3]], [[10, 8]]),
    "equal_opportunity": ([[4, 1]], [[6, 2]]),
    # tpr: sel_q / qualified; fpr: (selected - sel_q) / (decided - qualified)
    "equalized_odds": ([[4, 1], [1, 2]], [[6, 2], [4, 6]]),
    # correct = TP + TN; TN = decided - qualified - selected + sel_q = [3, 4]
    "accuracy_parity": ([[7, 5]], [[10, 8]]),
    "qualification_parity": ([[40, 30]], [[100, 50]]),
    # environment-defined allocation rows (discovered / occurred, vaccinated / infected)
    "benefit_rate": ([[2, 5]], [[9, 4]]),
}


def test_registry_names_and_pairs():
    assert list_notions() == sorted(EXPECTED)
    assert set(NOTIONS) == set(EXPECTED)
    for name, notion in NOTIONS.items():
        assert notion.name == name
        assert notion.title
        assert type(notion).__doc__
        assert notion.n_pairs == len(notion.pair_names)
    assert NOTIONS["equalized_odds"].pair_names == ("tpr", "fpr")
    assert NOTIONS["equalized_odds"].n_pairs == 2
    for name in EXPECTED:
        if name != "equalized_odds":
            assert NOTIONS[name].n_pairs == 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_supply_demand_hand_computed(name):
    supply, demand = get_notion(name).supply_demand(make_counts())
    expected_supply, expected_demand = EXPECTED[name]
    np.testing.assert_array_equal(supply, np.array(expected_supply, dtype=float))
    np.testing.assert_array_equal(demand, np.array(expected_demand, dtype=float))
    assert supply.dtype == np.float64 and demand.dtype == np.float64


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_supply_demand_vectorised(name):
    notion = get_notion(name)
    rng = np.random.default_rng(0)
    stacked = rng.integers(0, 20, size=(7, NUM_FIELDS, 3)).astype(float)
    supply, demand = notion.supply_demand(stacked)
    assert supply.shape == demand.shape == (7, notion.n_pairs, 3)
    for t in range(7):
        s_t, d_t = notion.supply_demand(stacked[t])
        np.testing.assert_array_equal(supply[t], s_t)
        np.testing.assert_array_equal(demand[t], d_t)
    batch = stacked.reshape(7, 1, NUM_FIELDS, 3).repeat(2, axis=1)
    s_b, d_b = notion.supply_demand(batch)
    assert s_b.shape == (7, 2, notion.n_pairs, 3)
    np.testing.assert_array_equal(s_b[:, 1], supply)
    np.testing.assert_array_equal(d_b[:, 0], demand)


def test_supply_demand_rejects_bad_shape():
    with pytest.raises(ValueError, match="expected shape"):
        get_notion("demographic_parity").supply_demand(np.zeros((NUM_FIELDS - 1, 2)))


def test_get_notion_error_message():
    with pytest.raises(ValueError) as info:
        get_notion("foo")
    message = str(info.value)
    assert message == (
        "unknown fairness notion 'foo'; valid choices: accuracy_parity, benefit_rate, "
        "demographic_parity, equal_opportunity, equalized_odds, qualification_parity"
    )
    assert "\n" not in message
    with pytest.raises(ValueError, match="unknown fairness notion 3"):
        get_notion(3)


def test_get_notion_passes_instances_and_is_immutable():
    notion = get_notion("equal_opportunity")
    assert get_notion(notion) is notion
    assert isinstance(notion, Notion)
    with pytest.raises(AttributeError):
        notion.name = "other"
    with pytest.raises(ValueError):
        notion.supply_coef[0, 0] = 5.0
    clone = pickle.loads(pickle.dumps(notion))
    assert clone == notion and hash(clone) == hash(notion)
    assert notion != get_notion("demographic_parity")
