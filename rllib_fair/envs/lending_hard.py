"""``fair/LendingHard-v0``: ELBERT's harder delayed-impact lending environment.

ELBERT (Xu et al. 2024, "Adapting Static Fairness to Sequential Decision-Making: Bias
Mitigation Strategies towards Equal Long-term Benefit Rate") ships a harder variant of
ml-fairness-gym's ``DelayedImpactEnv``: ``GeneralDelayedImpactEnv`` with the credit
updater ``_GeneralCreditShift``. The tables below are copied (values only) from

* repository ``umd-huang-lab/ELBERT``, file ``lending_experiment/harder_env.py``,
  commit ``bc822ff799ec706ce2687fed60583dec8d26337f`` (the only commit touching the
  file; blob ``8da3011af945e4b31fd3c52ce2801062a3e3e772``, unchanged at the repository's
  HEAD ``02d67f18852d43cf31d7db9b8de79e82a4446cc6``):

  - ``DELAYED_IMPACT_CLUSTER_PROBS_1`` -> :data:`HARD_CLUSTER_PROBS`,
  - ``ALTER_RATE = [0.3, 0.1]`` -> :data:`HARD_ALTER_RATES`,
  - ``TRANSITION_DYNAMICS`` (indexed ``[will_default][bin]``) -> :data:`HARD_TRANSITIONS`,
  - ``GROUP_0_PROB = 0.5``, ``BANK_STARTING_CASH = 10000``, ``INTEREST_RATE = 1``,
    ``CLUSTER_SHIFT_INCREMENT = 0.01`` (the ``LendingEnv`` defaults);

* success probabilities: ``lending_experiment/environments/lending_params.py`` of the same
  commit, ``DELAYED_IMPACT_SUCCESS_PROBS = (0.1, 0.2, 0.45, 0.6, 0.65, 0.7, 0.7)`` (the
  harder environment keeps the ml-fairness-gym values; ``will_default`` is
  ``Bernoulli(1 - success_probs[bin])``).

The paper (App. D.1, Eq. 20) only describes the original adjacent-bin shift; the harder
lending dynamics are documented in the code alone.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any, ClassVar

import numpy as np

from rllib_fair.envs.base import PROB_SUM_ATOL, FairEnvMixin, as_probabilities
from rllib_fair.envs.declared import bins_of
from rllib_fair.envs.lending import (
    DEFAULT_GROUP_PROBS,
    DEFAULT_SUCCESS_PROBS,
    LendingEnv,
)
from rllib_fair.settings import Rule, Setting, number, probabilities, show

#: ELBERT ``DELAYED_IMPACT_CLUSTER_PROBS_1``: initial credit-bin distribution per group
#: (group 1 still starts with lower credit: mean bin 3.25 vs 4.35).
HARD_CLUSTER_PROBS: tuple[tuple[float, ...], ...] = (
    (0.05, 0.05, 0.0, 0.2, 0.1, 0.3, 0.3),
    (0.0, 0.0, 0.3, 0.3, 0.3, 0.05, 0.05),
)

#: ELBERT ``ALTER_RATE``: per group, the probability that a *rejected* applicant's credit
#: still moves (drawn from the same transition row as if the loan had been granted).
HARD_ALTER_RATES: tuple[float, ...] = (0.3, 0.1)

#: ELBERT ``TRANSITION_DYNAMICS[will_default][bin]``: next-bin distribution of the
#: applicant's credit. Index 0 = repays (``will_default`` False), index 1 = defaults.
#: Rows are not adjacent-only: e.g. repaying from bin 4 goes to bin 1 with probability
#: 0.5, defaulting from bin 0 goes to bin 4 with probability 0.5.
HARD_TRANSITIONS: tuple[tuple[tuple[float, ...], ...], ...] = (
    (  # repay
        (0.2, 0.7, 0.1, 0.0, 0.0, 0.0, 0.0),
        (0.0, 0.2, 0.7, 0.1, 0.0, 0.0, 0.0),
        (0.0, 0.0, 0.2, 0.7, 0.1, 0.0, 0.0),
        (0.0, 0.0, 0.0, 0.2, 0.7, 0.1, 0.0),
        (0.0, 0.5, 0.0, 0.0, 0.2, 0.2, 0.1),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.2, 0.8),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
    ),
    (  # default
        (0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0),
        (0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0),
        (0.2, 0.7, 0.1, 0.0, 0.0, 0.0, 0.0),
        (0.0, 0.2, 0.7, 0.1, 0.0, 0.0, 0.0),
        (0.0, 0.0, 0.2, 0.7, 0.1, 0.0, 0.0),
        (0.0, 0.0, 0.0, 0.2, 0.7, 0.1, 0.0),
        (0.0, 0.0, 0.0, 0.0, 0.2, 0.7, 0.1),
    ),
)


def _as_list(value: Any) -> Any:
    """Nested lists for arrays (their repr in an error message then stays on one line)."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _transition_problem(trans, bins: int | None) -> str | None:
    """The error of a ``transition_dynamics`` table that does not fit ``bins`` bins."""
    if bins is None:
        return None
    shape_ok = all(len(mat) == bins and all(len(row) == bins for row in mat) for mat in trans)
    if shape_ok:
        return None
    shapes = [[len(row) for row in mat] for mat in trans]
    return (
        f"transition_dynamics: {show(trans)} is invalid (row lengths {shapes}); valid: 2 "
        f"tables of {bins} rows of {bins} probabilities (the bins of cluster_probs)"
    )


class LendingHardEnv(LendingEnv):
    """Lending whose credit moves by transition matrices, also after a rejection.

    ## Description

    ELBERT's harder version of the delayed-impact lending environment (Xu et al. 2024;
    ``GeneralDelayedImpactEnv`` in ``lending_experiment/harder_env.py``). Applicants are
    drawn as in ``fair/Lending-v0``: group ~ ``group_probs``, credit bin ~ the group's
    current distribution ``p_g``, would-repay label ``y ~ Bernoulli(success_probs[bin])``
    drawn with the applicant, independent of the decision. After the decision a
    destination bin ``d`` is drawn and ``min(cluster_shift_increment, p_g[bin])``
    probability mass moves from the applicant's bin to ``d`` in the applicant's group
    (nothing moves when ``d`` is the applicant's bin):

    * accept: ``d ~ transition_dynamics[k][bin]`` with ``k = 0`` if the applicant
      repays, ``k = 1`` if it defaults (non-adjacent jumps allowed);
    * reject: ``d ~ alter_rates[g] * transition_dynamics[k][bin] + (1 - alter_rates[g])
      * onehot(bin)``, i.e. with probability ``alter_rates[g]`` the credit moves exactly
      as if the loan had been granted (same row, same label), otherwise it stays.

    The initial distributions differ from ``fair/Lending-v0``; group 1 (``group_1``)
    starts with lower credit and is the disadvantaged group. Everything else (cash,
    reward, observation, counts) is as in ``fair/Lending-v0``.

    ## Action Space

    ``Discrete(2)``: 0 = reject, 1 = accept (grant the loan).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the applicant to decide on next, the
    concatenation of (each part switchable, at least one on):

    | part | size | flag |
    |---|---|---|
    | one-hot credit bin | ``n_bins`` (7) | ``obs_bin`` |
    | one-hot group | 2 | ``obs_group`` |
    | running true-positive rate per group | 2 | ``obs_tpr`` |

    The true-positive rate of group ``g`` is, over the episode so far, (accepted and
    would repay) / (would repay) among the group's decided applicants; 0 while the group
    has had no applicant who would repay. With all parts on, ``n = 11``.

    ## Rewards

    The change in the bank's cash: ``+loan_amount * interest_rate`` on accept and repay,
    ``-loan_amount`` on accept and default, 0 on reject (a rejection may still move
    credit mass, but never cash).

    ## Episode End

    * Termination: the cash falls below ``loan_amount`` (the bank cannot fund another
      loan).
    * Truncation: after ``max_steps`` steps.

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``group_probs`` | (0.5, 0.5) | probability of each group per applicant |
    | ``cluster_probs`` | ELBERT hard table (2, 7) | initial bin distribution per group |
    | ``success_probs`` | (.1, .2, .45, .6, .65, .7, .7) | repay prob. per bin, (B,) or (2, B) |
    | ``alter_rates`` | (0.3, 0.1) | per group, prob. that a rejection moves credit |
    | ``transition_dynamics`` | ELBERT (2, 7, 7) | ``[0 repay / 1 default][bin]`` rows |
    | ``interest_rate`` | 1.0 | gain per unit lent on repayment |
    | ``loan_amount`` | 1.0 | size of every loan |
    | ``starting_cash`` | 10,000 | bank cash at reset |
    | ``cluster_shift_increment`` | 0.01 | probability mass moved per credit move |
    | ``max_steps`` | 2000 | truncation horizon |
    | ``obs_bin`` / ``obs_group`` / ``obs_tpr`` | True | observation parts |

    Every row of ``transition_dynamics`` must be a probability vector over the
    ``n_bins`` bins of ``cluster_probs``.

    ## Fairness signals

    As ``fair/Lending-v0`` (default notion equal opportunity): ``info["fairness"]`` is a
    float64 ``[NUM_FIELDS, 2]`` counts array whose decision rows describe the applicant
    decided on in this step and whose population rows are, after the step,
    ``population[g] = group_probs[g]`` and ``qualified_mass[g] = group_probs[g] *
    sum_b p_g[b] * success_probs[g][b]`` (these move after rejections too). ``info``
    also has ``"group"``, ``"label"`` (1 = would repay), ``"decision"`` and
    ``"label_observed"`` (1 iff accepted), all python ``int``; ``reset`` gives zero
    decision counts and ``group = label = decision = -1``.

    ## Version History

    * v0: initial version (ELBERT ``harder_env.py`` at commit bc822ff).
    """

    DESCRIPTION: ClassVar[str] = (
        "ELBERT's harder lending (7 credit bins, 2 groups): credit moves by transition "
        "matrices, also after rejections (per-group alter rate)"
    )

    _UNIFORM_WIDTH: ClassVar[int] = 4  # group, bin, repay, destination bin

    DECLARED_SETTINGS: ClassVar[tuple] = (
        Setting(
            "alter_rates",
            "list",
            "per group: probability that a rejection moves the credit mass",
            item=number("", "", 0, 1),
            length=2,
        ),
        Setting(
            "transition_dynamics",
            "list",
            "destination-bin distributions [accept-repay, accept-default][bin]",
            item=Setting("", "list", item=probabilities("", "")),
            length=2,
        ),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "transitions_match_bins",
            ("transition_dynamics", "cluster_probs"),
            "transition_dynamics is 2 x bins x bins (one distribution per bin, over the bins)",
            lambda v: _transition_problem(v["transition_dynamics"], bins_of(v["cluster_probs"])),
            {"transition_dynamics": [[[1.0]], [[1.0]]]},
        ),
    )

    def __init__(
        self,
        group_probs: Any = DEFAULT_GROUP_PROBS,
        cluster_probs: Any = HARD_CLUSTER_PROBS,
        success_probs: Any = DEFAULT_SUCCESS_PROBS,
        alter_rates: Any = HARD_ALTER_RATES,
        transition_dynamics: Any = HARD_TRANSITIONS,
        interest_rate: float = 1.0,
        loan_amount: float = 1.0,
        starting_cash: float = 10_000.0,
        cluster_shift_increment: float = 0.01,
        max_steps: int = 2000,
        obs_bin: bool = True,
        obs_group: bool = True,
        obs_tpr: bool = True,
    ) -> None:
        super().__init__(
            group_probs=group_probs,
            cluster_probs=cluster_probs,
            success_probs=success_probs,
            interest_rate=interest_rate,
            loan_amount=loan_amount,
            starting_cash=starting_cash,
            cluster_shift_increment=cluster_shift_increment,
            max_steps=max_steps,
            obs_bin=obs_bin,
            obs_group=obs_group,
            obs_tpr=obs_tpr,
        )
        n_bins, n_groups = self.n_bins, self._n_groups
        rates = as_probabilities("alter_rates", _as_list(alter_rates), (n_groups,))
        trans = as_probabilities(
            "transition_dynamics", _as_list(transition_dynamics), (2, n_bins, n_bins)
        )
        sums = trans.sum(axis=-1)
        bad = np.argwhere(np.abs(sums - 1.0) > PROB_SUM_ATOL)
        if bad.size:
            k, b = (int(i) for i in bad[0])
            raise ValueError(
                f"transition_dynamics[{k}][{b}]={trans[k, b].tolist()}: every row must be "
                f"a probability vector summing to 1 (got sum {sums[k, b]:.6g})"
            )
        self.alter_rates = tuple(rates.tolist())
        self._transitions = trans.copy()

        # Cumulative destination rows, indexed by the label y (1 = repay) first, so that
        # step() needs no arithmetic: accept -> [y][bin], reject -> [g][y][bin].
        rows = trans.tolist()
        by_label = [rows[1], rows[0]]  # y = 0 defaults (index 1), y = 1 repays (index 0)
        self._accept_cum = [[list(accumulate(row)) for row in mat] for mat in by_label]
        self._reject_cum = []
        for rate in self.alter_rates:
            per_label = []
            for mat in by_label:
                per_bin = []
                for b, row in enumerate(mat):
                    mixed = [rate * p for p in row]
                    mixed[b] += 1.0 - rate
                    per_bin.append(list(accumulate(mixed)))
                per_label.append(per_bin)
            self._reject_cum.append(per_label)
        self._u_move = 0.0

    # ------------------------------------------------------------------ public state

    @property
    def transition_dynamics(self) -> np.ndarray:
        """``[2, n_bins, n_bins]`` copy: ``[0]`` rows after repaying, ``[1]`` after default."""
        return self._transitions.copy()

    # ------------------------------------------------------------------ internals

    def _destination(self, g: int, b: int, y: int, a: int) -> int:
        """Draws the destination bin from the reference's transition matrices.

        Accept: row ``b`` of the repay (``y = 1``) or default matrix. Reject: the same
        row mixed with staying put, ``alter_rate[g] * row + (1 - alter_rate[g]) e_b``
        (ELBERT ``harder_env.py``).
        """
        cum = self._accept_cum[y][b] if a else self._reject_cum[g][y][b]
        # u * total < total: the destination drawn always has positive probability.
        return bisect_right(cum, self._u_move * cum[-1])

    def _uniform_row(self) -> list[float]:
        """Returns the applicant's three draws; keeps the fourth for the destination bin."""
        row = FairEnvMixin._uniform_row(self)
        self._u_move = row[3]
        return row[:3]
