"""The logistic model of Lee et al. 2026 with delta-method confidence half-widths (numpy only).

Paper Sec. 4 ("All methods use logistic regression as the base model"): one logistic model
``p(x) = sigma(theta^T x)`` trained on the base quarter Q1 and then **updated** (warm start,
no new model) each quarter on the feedback of the granted loans, ``n_epochs = 40`` and
``lr = 0.05`` (Table 2). The paper does not give the minibatch size; full-batch gradient
ascent for 40 steps leaves the base model far from the MLE (measured here), so the default is
minibatch SGD with 32 rows per step over a seeded permutation per epoch (``batch_size=None``
gives full-batch gradient ascent). :meth:`LogisticModel.fit_mle` is Newton/IRLS.

Delta-method half-width (paper Sec. 4)::

    Delta_i = z_{1-alpha/2} * sqrt( grad_p_i^T (X^T W X)^{-1} grad_p_i ),
    grad_p_i = p_i (1 - p_i) x_i,   W = diag(p_j (1 - p_j)) over the rows j of X,

with ``X`` the design of the labelled rows the model was trained on. The paper
calls ``grad_p_i`` "the gradient of the sigmoid with respect to the linear predictor"; it is
the gradient of ``p_i`` with respect to ``theta``, which is what the formula
needs. The ridge ``1e-8 I`` is added only when the Cholesky factorisation fails,
so the intercept-only case equals the Wald interval to rounding.

The counterfactual utility objective (paper Sec. 4, "Counterfactual utility maximization")
and its analytic gradient are :func:`counterfactual_objective` and
:func:`counterfactual_gradient`.

Group column. The paper feeds the sensitive attribute ``A in {0, 1}`` to the logistic model
as one of the features and says nothing about its coding. A *fitted* logistic regression
with an intercept does not depend on which group is coded 1 (the intercept absorbs the
shift), but the model here is trained by a fixed number of gradient steps from
``theta = 0``, and gradient steps are not invariant under the affine change
``A -> 1 - A``: with the column as a raw 0/1 indicator, swapping the labels changed the
counterfactual strategy's final ``|Delta SR|`` from 0.255 to 0.160 (``l_y = 4``, five
seeds). The default ``group_encoding="centered"`` enters the group as ``A - 1/2``, i.e.
``-1/2`` and ``+1/2``: swapping the labels then only flips the sign of that column, which
is an orthogonal change of coordinates, so every gradient step, every prediction, every
confidence half-width and every decision is the same (bit for bit) and the coefficient
keeps the meaning of the indicator's (the log-odds difference between the groups).
``group_encoding="indicator"`` keeps the raw 0/1 column (the previous behaviour; results
then depend on which group is coded 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "GROUP_ENCODINGS",
    "DesignTransform",
    "LogisticModel",
    "counterfactual_gradient",
    "counterfactual_objective",
    "delta_method_halfwidth",
    "fisher_information",
    "sigmoid",
]


#: Codings of the group column ``A`` in the design (module docstring, "Group column").
GROUP_ENCODINGS: tuple[str, ...] = ("centered", "indicator")


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


@dataclass(frozen=True)
class DesignTransform:
    """Raw features -> design rows ``x = [1, standardised continuous, Q, A]``.

    One transform shared by the numpy core and the environment (so both see the same
    design rows): fit it on the
    base quarter, then apply it to every quarter.

    Attributes:
        feature_names: names of the raw columns (``"R"``/``"P"``, ``"Q"``, ``"A"``).
        mean: per raw column, subtracted before scaling (0 for Q and A).
        scale: per raw column, divisor (1 for Q and A).
        use_group_feature: keep the ``A`` column (BiasOnDemand's ``X``) or drop it
            (``X_ind``).
        q_encoding: ``"int"`` (Q as 0..3) or ``"onehot"`` (indicators of Q = 1, 2, 3).
        intercept: prepend a column of ones.
        group_encoding: ``"centered"`` (default: the design holds ``A - 1/2``, so swapping
            the group labels only flips the column's sign and leaves every prediction
            unchanged) or ``"indicator"`` (the raw 0/1 value; results depend on which group
            is coded 1). Applied after ``mean``/``scale``, which are 0/1 for ``A``.
    """

    feature_names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    use_group_feature: bool = True
    q_encoding: str = "int"
    intercept: bool = True
    group_encoding: str = "centered"

    def __post_init__(self) -> None:
        if self.q_encoding not in ("int", "onehot"):
            raise ValueError(
                f"q_encoding: {self.q_encoding!r} is invalid; valid choices: int, onehot"
            )
        if self.group_encoding not in GROUP_ENCODINGS:
            raise ValueError(
                f"group_encoding: {self.group_encoding!r} is invalid; valid choices: "
                f"{', '.join(GROUP_ENCODINGS)}"
            )

    @classmethod
    def fit(
        cls,
        raw: np.ndarray,
        feature_names: tuple[str, ...],
        *,
        use_group_feature: bool = True,
        q_encoding: str = "int",
        intercept: bool = True,
        group_encoding: str = "centered",
    ) -> DesignTransform:
        """Standardises the continuous columns (R or P) by ``raw``'s mean and sd.

        The group column ``A`` and ``Q`` are not standardised (mean 0, scale 1);
        ``group_encoding`` then codes ``A`` (class docstring).
        """
        raw = np.asarray(raw, dtype=np.float64)
        mean, scale = [], []
        for k, name in enumerate(feature_names):
            if name in ("Q", "A"):
                mean.append(0.0)
                scale.append(1.0)
            else:
                sd = float(raw[:, k].std())
                mean.append(float(raw[:, k].mean()))
                scale.append(sd if sd > 0 else 1.0)
        return cls(
            tuple(feature_names),
            tuple(mean),
            tuple(scale),
            use_group_feature=use_group_feature,
            q_encoding=q_encoding,
            intercept=intercept,
            group_encoding=group_encoding,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the design columns."""
        out = ["1"] if self.intercept else []
        for name in self.feature_names:
            if name == "A" and not self.use_group_feature:
                continue
            if name == "Q" and self.q_encoding == "onehot":
                out += ["Q=1", "Q=2", "Q=3"]
            else:
                out.append(name)
        return tuple(out)

    @property
    def n_columns(self) -> int:
        """Number of design columns ``d``."""
        return len(self.names)

    def __call__(self, raw: np.ndarray) -> np.ndarray:
        """Returns the ``[n, d]`` float64 design of the raw ``[n, k]`` features."""
        raw = np.asarray(raw, dtype=np.float64)
        cols = [np.ones(raw.shape[0])] if self.intercept else []
        for k, name in enumerate(self.feature_names):
            col = (raw[:, k] - self.mean[k]) / self.scale[k]
            if name == "A" and not self.use_group_feature:
                continue
            if name == "A" and self.group_encoding == "centered":
                col = col - 0.5  # -1/2 and +1/2: a label swap flips the sign only
            if name == "Q" and self.q_encoding == "onehot":
                cols += [(col == level).astype(np.float64) for level in (1, 2, 3)]
            else:
                cols.append(col)
        return np.column_stack(cols)


def fisher_information(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Returns ``X^T W X`` with ``W = diag(p (1 - p))`` at ``theta`` (paper Sec. 4)."""
    p = sigmoid(x @ theta)
    w = p * (1.0 - p)
    return (x * w[:, None]).T @ x


def delta_method_halfwidth(
    theta: np.ndarray,
    x_query: np.ndarray,
    x_fisher: np.ndarray | None = None,
    *,
    z: float = 1.96,
    fisher: np.ndarray | None = None,
) -> np.ndarray:
    """Delta-method CI half-widths of ``p_i = sigma(theta^T x_i)`` (paper Sec. 4).

    ``Delta_i = z * sqrt(grad_p_i^T (X^T W X)^{-1} grad_p_i)``, ``grad_p_i = p_i (1-p_i) x_i``.

    Args:
        theta: ``[d]`` parameters.
        x_query: ``[N, d]`` design rows to score.
        x_fisher: ``[n, d]`` design rows of the Fisher matrix (the labelled rows).
        z: normal quantile (1.96 for 95 %).
        fisher: precomputed ``X^T W X`` (overrides ``x_fisher``).

    Returns:
        ``[N]`` half-widths.
    """
    theta = np.asarray(theta, dtype=np.float64)
    x_query = np.asarray(x_query, dtype=np.float64)
    if fisher is None:
        if x_fisher is None:
            raise ValueError("give x_fisher or fisher")
        fisher = fisher_information(theta, np.asarray(x_fisher, dtype=np.float64))
    p = sigmoid(x_query @ theta)
    grad = (p * (1.0 - p))[:, None] * x_query  # grad_p_i = p_i (1 - p_i) x_i
    d = fisher.shape[0]
    try:
        chol = np.linalg.cholesky(fisher)
    except np.linalg.LinAlgError:
        try:  # ridge only when needed: the exact inverse whenever it exists
            chol = np.linalg.cholesky(fisher + 1e-8 * np.eye(d))
        except np.linalg.LinAlgError:
            cov = np.linalg.pinv(fisher)
            var = np.einsum("ij,jk,ik->i", grad, cov, grad)
            return z * np.sqrt(np.maximum(var, 0.0))
    # grad^T F^{-1} grad = |L^{-1} grad|^2 with F = L L^T.
    solved = np.linalg.solve(chol, grad.T)
    var = np.einsum("ij,ij->j", solved, solved)
    return z * np.sqrt(var)


def counterfactual_objective(
    theta: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    observed: np.ndarray,
    tau: float,
    *,
    gain: float = 0.4,
    loss: float = 1.0,
    alpha: float = 10.0,
) -> float:
    """Counterfactual utility objective of paper Sec. 4 (to maximise).

    ``J = sum_t [ m_t D_t (Y_t g - (1 - Y_t) l) + (1 - D_t)(p_t g - (1 - p_t) l) ]`` with
    ``p_t = sigma(theta^T x_t)``, soft decision ``D_t = sigma(alpha (p_t - tau))`` and
    ``m_t = observed[t]``: the observed (first) term needs ``Y_t`` and is kept only where
    the label was observed (``cf_rows="all"``: every applicant's counterfactual term,
    where the paper names only the applicants not granted); with every row observed this is
    the paper's objective verbatim.
    """
    p = sigmoid(x @ theta)
    d = sigmoid(alpha * (p - tau))
    m = np.asarray(observed, dtype=np.float64)
    y = np.where(m > 0, np.asarray(y, dtype=np.float64), 0.0)
    u_obs = y * gain - (1.0 - y) * loss
    u_cf = p * gain - (1.0 - p) * loss
    return float(np.sum(m * d * u_obs + (1.0 - d) * u_cf))


def counterfactual_gradient(
    theta: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    observed: np.ndarray,
    tau: float,
    *,
    gain: float = 0.4,
    loss: float = 1.0,
    alpha: float = 10.0,
) -> np.ndarray:
    """Analytic gradient of :func:`counterfactual_objective` with respect to ``theta``.

    ``dp_t = p_t (1 - p_t) x_t``, ``dD_t = alpha D_t (1 - D_t) dp_t``;
    ``dJ = sum_t [ dD_t (m_t u_obs_t - u_cf_t) + (1 - D_t)(g + l) dp_t ]``.
    """
    p = sigmoid(x @ theta)
    return _cf_grad(p, x, y, np.asarray(observed, dtype=np.float64), tau, gain, loss, alpha)


def _cf_grad(p, x, y, m, tau, gain, loss, alpha):
    d = 1.0 / (1.0 + np.exp(-np.clip(alpha * (p - tau), -700.0, 700.0)))
    y = np.where(m > 0, y, 0.0)
    u_obs = y * gain - (1.0 - y) * loss
    u_cf = p * gain - (1.0 - p) * loss
    dp = p * (1.0 - p)
    coef = alpha * d * (1.0 - d) * dp * (m * u_obs - u_cf) + (1.0 - d) * (gain + loss) * dp
    return x.T @ coef


class LogisticModel:
    """Logistic regression ``p(x) = sigma(theta^T x)`` trained by gradient ascent.

    Args:
        n_features: design width ``d`` (intercept included).
        lr: step size (Table 2: 0.05).
        n_epochs: passes per call of :meth:`fit` (Table 2: 40).
        batch_size: rows per step (default 32, [choice]); ``None`` = full batch.
        theta: initial parameters (default zeros, [choice]).
    """

    def __init__(
        self,
        n_features: int,
        *,
        lr: float = 0.05,
        n_epochs: int = 40,
        batch_size: int | None = 32,
        theta: np.ndarray | None = None,
    ) -> None:
        if lr <= 0 or n_epochs < 0:
            raise ValueError("lr must be > 0 and n_epochs >= 0")
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be >= 1 or None")
        self.lr = float(lr)
        self.n_epochs = int(n_epochs)
        self.batch_size = batch_size
        self.theta = np.zeros(n_features) if theta is None else np.array(theta, dtype=np.float64)
        if self.theta.shape != (n_features,):
            raise ValueError(f"theta must have shape ({n_features},)")

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Returns ``p = sigma(X theta)``."""
        return sigmoid(np.asarray(x, dtype=np.float64) @ self.theta)

    def grad_proba(self, x: np.ndarray) -> np.ndarray:
        """Returns ``[N, d]`` gradients ``dp_i / dtheta = p_i (1 - p_i) x_i``."""
        x = np.asarray(x, dtype=np.float64)
        p = self.predict_proba(x)
        return (p * (1.0 - p))[:, None] * x

    def ci_halfwidth(self, x: np.ndarray, x_fisher: np.ndarray, *, z: float = 1.96) -> np.ndarray:
        """Delta-method half-widths at the current ``theta`` (:func:`delta_method_halfwidth`)."""
        return delta_method_halfwidth(self.theta, x, x_fisher, z=z)

    def _batches(self, rng: np.random.Generator | None, epochs: int, *arrays: np.ndarray):
        # Yields minibatches (tuples of views); one seeded permutation per epoch, the
        # permuted copy sliced in order (same rows as fancy-indexing each batch, faster).
        n = arrays[0].shape[0]
        if self.batch_size is None or self.batch_size >= n:
            for _ in range(epochs):
                yield arrays
            return
        if rng is None:
            raise ValueError("minibatch training needs an rng (seeded permutation per epoch)")
        bs = self.batch_size
        slices = [slice(start, start + bs) for start in range(0, n, bs)]
        for _ in range(epochs):
            perm = rng.permutation(n)
            shuffled = [a[perm] for a in arrays]
            if len(arrays) == 2:
                xs, ys = shuffled
                for sl in slices:
                    yield xs[sl], ys[sl]
            else:
                for sl in slices:
                    yield tuple(a[sl] for a in shuffled)

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        *,
        rng: np.random.Generator | None = None,
        epochs: int | None = None,
        lr: float | None = None,
    ) -> LogisticModel:
        """Warm-started gradient ascent on the mean log-likelihood.

        ``theta <- theta + lr * X_b^T (y_b - p_b) / |b|`` over ``epochs`` passes, each a new
        permutation from ``rng``. Returns ``self``; no rows means no change.
        """
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = x.shape[0]
        if n == 0:
            return self
        lr = self.lr if lr is None else float(lr)
        epochs = self.n_epochs if epochs is None else int(epochs)
        theta = self.theta
        with np.errstate(over="ignore"):  # exp(-z) = inf only saturates p at 0
            for xb, yb in self._batches(rng, epochs, x, y):
                p = 1.0 / (1.0 + np.exp(-(xb @ theta)))
                theta = theta + (lr / yb.shape[0]) * (xb.T @ (yb - p))
        self.theta = theta
        return self

    def fit_counterfactual(
        self,
        x: np.ndarray,
        y: np.ndarray,
        observed: np.ndarray,
        tau: float,
        *,
        gain: float = 0.4,
        loss: float = 1.0,
        alpha: float = 10.0,
        bce_weight: float = 0.0,
        rng: np.random.Generator | None = None,
        epochs: int | None = None,
        lr: float | None = None,
    ) -> LogisticModel:
        """Warm-started gradient ascent on the counterfactual utility (paper Sec. 4).

        Per step ``theta <- theta + lr * grad J_b / |b|`` (:func:`counterfactual_gradient`,
        mean over the minibatch) plus ``bce_weight`` times the log-likelihood gradient of the
        observed rows of the batch (``cf_bce_weight``; the paper has none: default 0).
        """
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        m = np.asarray(observed, dtype=np.float64)
        n = x.shape[0]
        if n == 0:
            return self
        lr = self.lr if lr is None else float(lr)
        epochs = self.n_epochs if epochs is None else int(epochs)
        y = np.where(m > 0, y, 0.0)
        # Per row, constant over the steps: m_t u_obs_t = m_t (Y_t g - (1 - Y_t) l).
        mu = m * (y * gain - (1.0 - y) * loss)
        theta = self.theta
        with np.errstate(over="ignore"):  # exp overflow only saturates D at 0 (alpha huge)
            theta = self._cf_steps(
                rng, epochs, x, y, m, mu, theta, tau, gain, loss, alpha, bce_weight, lr
            )
        self.theta = theta
        return self

    def _cf_steps(self, rng, epochs, x, y, m, mu, theta, tau, gain, loss, alpha, bce_weight, lr):
        gl = gain + loss
        for xb, yb, mb, mub in self._batches(rng, epochs, x, y, m, mu):
            p = 1.0 / (1.0 + np.exp(-(xb @ theta)))  # overflow ignored by the caller
            d = 1.0 / (1.0 + np.exp(-alpha * (p - tau)))  # |alpha (p - tau)| <= alpha
            # dJ = sum_t dp_t [alpha D(1-D)(m u_obs - u_cf) + (1 - D)(g + l)], same as _cf_grad
            coef = (p * (1.0 - p)) * (
                alpha * d * (1.0 - d) * (mub - (p * gl - loss)) + (1.0 - d) * gl
            )
            if bce_weight:
                coef = coef + bce_weight * (mb * (yb - p))
            theta = theta + (lr / xb.shape[0]) * (xb.T @ coef)
        return theta

    def fit_mle(
        self, x: np.ndarray, y: np.ndarray, *, max_iter: int = 100, tol: float = 1e-12
    ) -> LogisticModel:
        """Newton/IRLS to the maximum-likelihood estimate, from the current ``theta``."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        theta = self.theta.copy()
        for _ in range(max_iter):
            p = sigmoid(x @ theta)
            grad = x.T @ (y - p)
            hess = (x * (p * (1.0 - p))[:, None]).T @ x
            try:
                step = np.linalg.solve(hess, grad)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(hess, grad, rcond=None)[0]
            theta = theta + step
            if np.max(np.abs(step)) < tol:
                break
        self.theta = theta
        return self
