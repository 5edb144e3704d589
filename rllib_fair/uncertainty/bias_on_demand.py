"""The BiasOnDemand synthetic data generator (Baumann et al., FAccT 2023), with a seed.

Lee et al. (FAccT 2026) draw their applicants from BiasOnDemand (paper Sec. 4 and
App. A, Eqs. 4a-4e and 5a-5c). The public generator (``rcrupiISP/BiasOnDemand``,
``generate_dataset.py::create_synth``; identical in ``joebaumann/biasondemand``) hard-codes
``np.random.seed(42)`` on numpy's legacy global generator. :func:`generate` runs the same
equations in the same draw order on ``np.random.RandomState(seed)``, so that

* ``generate(BiasOnDemandConfig.bod_defaults(), seed=42, compat=True)`` reproduces the public
  generator bit for bit (before its sklearn train/test split), and
* any other seed gives the same generator with a different stream (Table 2's
  ``random_seed`` "controls data generation").

GROUP CONVENTION (read this)
============================
BiasOnDemand puts **every** bias on the rows with ``A = 1`` (its README: "the biases are
introduced w.r.t. individuals in the group A = 1"; the paper's App. A and Table 2 agree),
and ``p_u`` under-samples ``A = 1``. The paper's text (Sec. 3, Sec. 5, App. B) instead calls
``A = 0`` the disadvantaged minority and reads ``metric(0) - metric(1) < 0`` as "group 0 is
disadvantaged". To make the plots read as the paper reads them, the default
``disadvantaged_group=0`` **relabels** ``A <- 1 - A`` after generation and before anything
else sees the data: the biased (and under-sampled) group is then group 0. Nothing else
changes (the relabelling is applied to the finished table). ``disadvantaged_group=1`` (and
``compat=True``) keeps BiasOnDemand's labels.

Caveats the relabelling cannot fix (they are in the generator itself):

* ``l_y_b`` (interaction "proxy" bias) enters the score with a **plus** sign,
  ``S += l_y_b * R * A`` (``generate_dataset.py`` lines 74 and 76). With mean R about 6 it
  *raises* the biased group's score: at ``l_y_b = 4`` P(Y=1) is 0.67 for the biased group
  and 0.02 for the other. Under ``l_y_b > 0`` the "biased" group 0 is therefore the
  **favoured** group and negative differences mean group 1 is disadvantaged.
* ``l_h_q`` *raises* Q for the biased group (``p_Q = sigma(l_h_q A - l_r_q R)``), against
  Table 2's wording "reduces Q"; because Q enters the score with ``-l_q``, the net effect
  still lowers the biased group's score.

We implement the public code, not its docstrings or the paper's wording, in both cases.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BiasOnDemandConfig", "BiasOnDemandData", "generate"]


@dataclass(frozen=True)
class BiasOnDemandConfig:
    """Every knob of BiasOnDemand's ``create_synth`` (defaults: the paper's no-bias baseline).

    The defaults are Table 2's fixed values with every bias coefficient 0 (``dim = 20000``,
    ``l_q = 2``, ``sy = 2``). :meth:`bod_defaults` gives the public generator's own (biased)
    function defaults. Names follow BiasOnDemand; the paper's App. A symbol is in brackets.

    Attributes:
        dim: number of applicants drawn (rows before under-sampling).
        l_y: historical bias on the score [beta_Y^(h)], ``S -= l_y A`` (Eq. 4d).
        l_m_y: measurement bias on the observed label [beta_Y^(m)], ``S~ = S - l_m_y A``
            (Eq. 5b; no extra noise, as in the code).
        thr_supp: correlation threshold of the "suppression" feature set ``X_supp``.
        l_h_r: historical bias on resources [beta_R^(h)], ``R = N_R - l_h_r A`` (Eq. 4b).
        l_h_q: historical "bias" on Q [beta_Q^(h)], ``p_Q = sigma(l_h_q A - l_r_q R)`` (Eq. 4c).
        l_m: measurement (proxy) bias on R [beta_R^(m)]; if non-zero the feature table holds
            ``P = R - l_m A + N(0, 2^2)`` instead of R (Eq. 5a).
        p_u: fraction of the ``A = 1`` rows kept (representation bias by under-sampling).
        l_r: under-sample by keeping the lowest-R ``A = 1`` rows instead of the first ones.
        l_o: omitted-variable bias: drop the R (or P) column.
        l_y_b: interaction term ``+ l_y_b R A`` in the score [beta_Yb] (sign as in the code).
        l_q: weight of Q in the score [alpha_Q] (Table 2 calls it "levels"; it is a weight).
        sy: standard deviation of the score noise [sigma_S].
        l_r_q: influence of R on Q [alpha_RQ].
        l_m_y_non_linear: BiasOnDemand's non-linear measurement bias on the label.
        p_a: P(A = 1) [p_A]. BiasOnDemand fixes 0.5 (an extension knob here; 0.5 keeps the
            stream bit-compatible).
    """

    dim: int = 20000
    l_y: float = 0.0
    l_m_y: float = 0.0
    thr_supp: float = 1.0
    l_h_r: float = 0.0
    l_h_q: float = 0.0
    l_m: float = 0.0
    p_u: float = 1.0
    l_r: bool = False
    l_o: bool = False
    l_y_b: float = 0.0
    l_q: float = 2.0
    sy: float = 2.0
    l_r_q: float = 0.0
    l_m_y_non_linear: bool = False
    p_a: float = 0.5

    def __post_init__(self) -> None:
        if int(self.dim) != self.dim or self.dim < 100:
            raise ValueError(f"dim must be an integer >= 100, got {self.dim}")
        if not 0.0 < self.p_u <= 1.0:
            raise ValueError(f"p_u must lie in (0, 1], got {self.p_u}")
        if not self.sy > 0.0:
            raise ValueError(f"sy must be > 0, got {self.sy}")
        if not 0.0 < self.p_a < 1.0:
            raise ValueError(f"p_a must lie in (0, 1), got {self.p_a}")
        for name in ("l_y", "l_m_y", "l_h_r", "l_h_q", "l_m", "l_y_b", "l_q", "l_r_q", "thr_supp"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)}")

    @classmethod
    def bod_defaults(cls) -> BiasOnDemandConfig:
        """Returns the public generator's function defaults (biased: l_y = 4, l_m = 1, ...)."""
        return cls(
            dim=15000,
            l_y=4.0,
            l_m_y=0.0,
            thr_supp=1.0,
            l_h_r=1.5,
            l_h_q=1.0,
            l_m=1.0,
            p_u=1.0,
            l_r=False,
            l_o=False,
            l_y_b=0.0,
            l_q=2.0,
            sy=5.0,
            l_r_q=0.0,
            l_m_y_non_linear=False,
        )

    def feature_names(self) -> tuple[str, ...]:
        """Names of the feature columns :func:`generate` returns for this config.

        ``"P"`` (the proxy, ``l_m`` non-zero) or ``"R"``, left out with ``l_o``; then
        ``"Q"`` and ``"A"``.
        """
        first = () if self.l_o else ("P" if self.l_m != 0 else "R",)
        return (*first, "Q", "A")

    def replace(self, **changes) -> BiasOnDemandConfig:
        """Returns a copy with ``changes`` applied (validated)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class BiasOnDemandData:
    """One generated table (rows kept after under-sampling, in generation order).

    Attributes:
        features: ``[n, k]`` float64 feature table ``X`` = (R or P, Q, A), without R/P when
            ``l_o``; column names in ``feature_names``. The ``A`` column holds ``group``.
        feature_names: names of the columns of ``features`` (``"R"`` or ``"P"``, ``"Q"``,
            ``"A"``).
        group: ``[n]`` int64 group after the convention of ``disadvantaged_group``.
        y: ``[n]`` int64 observed (possibly measurement-biased) label ``1[S~ > Pi_S]``.
        y_real: ``[n]`` int64 unbiased label ``1[S > Pi_S]`` (historical bias included).
        score: ``[n]`` biased score ``S~``; ``score_real``: ``[n]`` score ``S``.
        threshold: ``Pi_S`` = mean of the biased score over the kept rows (applied to both).
        resources: ``[n]`` latent resources R (whatever the table holds).
        q: ``[n]`` int64 Q in {0, 1, 2, 3}.
        biased_group: the group label (after relabelling) that carries every bias.
        disadvantaged_group: 0 (relabelled) or 1 (BiasOnDemand's labels).
        thr_supp: the config's ``thr_supp`` (for :meth:`feature_matrix`).
    """

    features: np.ndarray
    feature_names: tuple[str, ...]
    group: np.ndarray
    y: np.ndarray
    y_real: np.ndarray
    score: np.ndarray
    score_real: np.ndarray
    threshold: float
    resources: np.ndarray
    q: np.ndarray
    biased_group: int
    disadvantaged_group: int

    def __len__(self) -> int:
        return int(self.y.shape[0])

    thr_supp: float = 1.0

    def feature_matrix(self, kind: str = "X") -> tuple[np.ndarray, tuple[str, ...]]:
        """Returns one of BiasOnDemand's feature sets and its column names.

        Args:
            kind: ``"X"`` (all features, A included), ``"X_ind"`` (A dropped) or ``"X_supp"``
                (A dropped and every feature with ``|corr(feature, A)| >= thr_supp``; computed
                on the whole table, BiasOnDemand computes it on its train split).

        Returns:
            ``(matrix, names)``.
        """
        if kind == "X":
            return self.features, self.feature_names
        keep = [k for k, name in enumerate(self.feature_names) if name != "A"]
        if kind == "X_supp":
            thr = self.thr_supp
            keep = [
                k for k in keep if abs(np.corrcoef(self.features[:, k], self.group)[0, 1]) < thr
            ]
        elif kind != "X_ind":
            raise ValueError(f"kind must be 'X', 'X_ind' or 'X_supp', got {kind!r}")
        return self.features[:, keep], tuple(self.feature_names[k] for k in keep)


def generate(
    config: BiasOnDemandConfig | None = None,
    seed: int = 0,
    *,
    compat: bool = False,
    disadvantaged_group: int | None = None,
) -> BiasOnDemandData:
    """Draws one BiasOnDemand table (paper App. A, Eqs. 4a-4e, 5a-5c; [bod] ``create_synth``).

    The draws are made on ``np.random.RandomState(seed)`` in the public generator's order
    (gamma, the unused normal N2, proxy noise, score noise, A, Q); ``RandomState(42)``
    reproduces its hard-coded ``np.random.seed(42)`` exactly.

    Args:
        config: the knobs (default: the paper's no-bias baseline).
        seed: seed of the legacy ``RandomState`` stream (the public generator uses 42).
        compat: reproduce the public generator exactly, quirks included: keep its group
            labels (``disadvantaged_group`` must be 1 or None), keep every ``A = 1`` row when
            ``int(p_u * #{A=1})`` truncates to 0, and raise ``KeyError`` for ``l_r`` with
            ``l_m != 0`` (its sort by the missing column R). Without ``compat`` those two
            quirks raise a ``ValueError`` / sort by the latent R respectively.
        disadvantaged_group: 0 (default) relabels ``A <- 1 - A`` so that group 0 carries the
            biases (module docstring, "GROUP CONVENTION"); 1 keeps BiasOnDemand's labels.

    Returns:
        The generated :class:`BiasOnDemandData`.
    """
    cfg = BiasOnDemandConfig() if config is None else config
    if disadvantaged_group is None:
        disadvantaged_group = 1 if compat else 0
    if disadvantaged_group not in (0, 1):
        raise ValueError(f"disadvantaged_group must be 0 or 1, got {disadvantaged_group}")
    if compat and disadvantaged_group != 1:
        raise ValueError("compat=True keeps BiasOnDemand's group labels: disadvantaged_group=1")
    dim = int(cfg.dim)
    rng = np.random.RandomState(seed)
    # Draw order of create_synth (generate_dataset.py lines 53-58); N2 is drawn and unused.
    n1 = rng.gamma(2, 3, dim)  # N_R ~ Gamma(k_R = 2, theta_R = 3)      (Eq. 4b)
    rng.normal(1, 0.5, dim)  # N2: unused, kept for the stream
    n_p = rng.normal(0, 2, dim)  # N_R~ ~ N(0, 2^2)                      (Eq. 5a)
    n_y = rng.normal(0, cfg.sy, dim)  # N_S ~ N(0, sigma_S^2)            (Eq. 4d)
    a = rng.binomial(1, cfg.p_a, size=dim)  # A ~ Ber(p_A)               (Eq. 4a)
    r = n1 - cfg.l_h_r * a  # R = N_R - beta_R^(h) A                      (Eq. 4b)
    p_q = 1 / (1 + np.exp(cfg.l_r_q * r - cfg.l_h_q * a))  # sigma(-(a_RQ R - b_Q A)) (Eq. 4c)
    q = rng.binomial(3, p_q)  # Q ~ Bin(K = 3, p_Q)                       (Eq. 4c)
    # Score (Eq. 4d) with the measurement bias of Eq. 5b folded in, as the code does.
    if cfg.l_m_y_non_linear:
        med = np.median(r)
        s = (
            r
            - cfg.l_q * q
            - cfg.l_y * a
            + cfg.l_m_y * a * (r < med)
            - cfg.l_m_y * a * (r >= med)
            + n_y
            + cfg.l_y_b * r * a
        )
    else:
        s = r - cfg.l_q * q - cfg.l_y * a - cfg.l_m_y * a + n_y + cfg.l_y_b * r * a
    s_real = r - cfg.l_q * q - cfg.l_y * a + n_y + cfg.l_y_b * r * a
    proxy = cfg.l_m != 0
    first = r - a * cfg.l_m + n_p if proxy else r  # proxy R~ = R - beta_R^(m) A + N  (Eq. 5a)

    # Under-sampling of A = 1 (representation bias), generate_dataset.py lines 86-94.
    keep = np.ones(dim, dtype=bool)
    ones = np.flatnonzero(a == 1)
    n_keep = int(ones.shape[0] * cfg.p_u)
    if n_keep == 0 and cfg.p_u < 1 and not compat:
        raise ValueError(
            f"p_u={cfg.p_u} keeps int(p_u * {ones.shape[0]}) = 0 rows of A = 1; BiasOnDemand "
            "then keeps all of them (compat=True reproduces that). Use a larger p_u."
        )
    if n_keep > 0:
        if cfg.l_r:
            if compat and proxy:
                raise KeyError("R")  # BiasOnDemand sorts by 'R' on a table that holds 'P'
            # pandas sort_values(by='R') is quicksort: ties (measure zero here) may order
            # differently; R is continuous so the kept set is the same.
            order = ones[np.argsort(r[ones], kind="stable")]
            keep[order[n_keep:]] = False
        else:
            keep[ones[n_keep:]] = False
    first, q, a = first[keep], q[keep], a[keep]
    s, s_real, r = s[keep], s_real[keep], r[keep]

    threshold = float(s.mean())  # Pi_S = mean of the biased score over the kept rows
    y = (s > threshold).astype(np.int64)  # observed label Y~ (Eq. 5c)
    y_real = (s_real > threshold).astype(np.int64)  # Y (Eq. 4e), same threshold

    group = a.astype(np.int64)
    if disadvantaged_group == 0:
        group = 1 - group  # relabel: the biased group becomes group 0
    biased_group = 1 if disadvantaged_group == 1 else 0

    columns = [] if cfg.l_o else [first]
    columns += [q.astype(np.float64), group.astype(np.float64)]
    data = BiasOnDemandData(
        features=np.column_stack(columns),
        feature_names=cfg.feature_names(),
        group=group,
        y=y,
        y_real=y_real,
        score=s,
        score_real=s_real,
        threshold=threshold,
        resources=r,
        q=q.astype(np.int64),
        biased_group=biased_group,
        disadvantaged_group=disadvantaged_group,
        thr_supp=float(cfg.thr_supp),
    )
    return data
