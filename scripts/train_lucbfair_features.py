"""Trains L-UCBFair's ``"learned"`` feature map and writes its weights as a small ``.npz``.

The package's recipe (a choice: the paper's App. D.1 is not available, nor are the
supplementary code's trained weights; docs/methods/yin2023.md, "L-UCBFair"): transitions
of a replicator env with uniform random actions from random states; input ``(q_0, q_1,
a_0, a_1)``; an MLP ``[64, 64]`` (ReLU) ending in a softmax over ``d`` features (so
``phi`` lies on the simplex and ``||phi||_2 <= 1``); two *linear* heads without bias,
``r_hat = theta_r^T phi`` and ``g_hat = theta_g^T phi`` (Ass. 3.1 wants ``r`` and ``g``
linear in ``phi``); loss ``MSE(r) + MSE(g)``; Adam (lr 5e-3, weight decay 1e-4), batch
128, early stopping on a 10 % validation split. The held-out R^2 of ``r`` and ``g`` is
stored in the file next to the weights (``r2_r``, ``r2_g``).

The module runs the map in numpy
(:func:`rllib_fair.algorithms.lucbfair.features.learned_forward`); use it with
``feature_map: learned`` and ``feature_kwargs: {path: <file>}``.

    python scripts/train_lucbfair_features.py --out lucbfair_features.npz
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def make_data(env_id: str, env_config: dict, n: int, seed: int):
    """``n`` random-action transitions at random states: inputs ``[n, 4]``, ``r``, ``g``."""
    import gymnasium

    import rllib_fair  # noqa: F401  (registers the fair/* ids)

    env = gymnasium.make(env_id, **env_config).unwrapped
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.0, 1.0, size=(n, 2))
    a = rng.uniform(0.0, 1.0, size=(n, 2))
    stats = env.step_statistics(a, q)
    x = np.concatenate([q, a], axis=1)
    return x, 1.0 - stats["loss"], 1.0 - stats["disparity"]


def train(x, r, g, *, dim, hidden, epochs, lr, weight_decay, batch, seed, patience=10):
    """Fits the map and the two linear heads; returns (numpy params, R^2 of r, R^2 of g)."""
    import torch

    torch.manual_seed(seed)
    n_val = max(1, len(x) // 10)
    perm = np.random.default_rng(seed).permutation(len(x))
    val, tr = perm[:n_val], perm[n_val:]
    X = torch.as_tensor(x, dtype=torch.float32)
    Y = torch.as_tensor(np.stack([r, g], axis=1), dtype=torch.float32)
    layers, width = [], 4
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, dim))
    net = torch.nn.Sequential(*layers)
    heads = torch.nn.Linear(dim, 2, bias=False)
    params = list(net.parameters()) + list(heads.parameters())
    opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)

    def predict(idx):
        return heads(torch.softmax(net(X[idx]), dim=1))

    best, best_state, bad = float("inf"), None, 0
    for _ in range(epochs):
        order = tr[np.random.default_rng(int(torch.randint(0, 2**31, ()))).permutation(len(tr))]
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            loss = ((predict(idx) - Y[idx]) ** 2).mean(dim=0).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            v = float(((predict(val) - Y[val]) ** 2).mean(dim=0).sum())
        if v < best - 1e-7:
            best, bad = v, 0
            best_state = [p.detach().clone() for p in params]
        else:
            bad += 1
            if bad >= patience:
                break
    with torch.no_grad():
        for p, b in zip(params, best_state, strict=True):
            p.copy_(b)
        pred = predict(val).numpy()
    yv = Y[val].numpy()
    r2 = 1.0 - ((pred - yv) ** 2).sum(0) / ((yv - yv.mean(0)) ** 2).sum(0)
    out = {}
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    for i, m in enumerate(linears):
        out[f"W{i}"] = m.weight.detach().numpy().T.astype(np.float64)
        out[f"b{i}"] = m.bias.detach().numpy().astype(np.float64)
    out["theta"] = heads.weight.detach().numpy().T.astype(np.float64)
    return out, float(r2[0]), float(r2[1])


def main(argv=None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="fair/Replicator-v0")
    p.add_argument("--env-config", default="{}", help="JSON env kwargs")
    p.add_argument("--transitions", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=10)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="lucbfair_features.npz")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    x, r, g = make_data(args.env, json.loads(args.env_config), args.transitions, args.seed)
    params, r2_r, r2_g = train(
        x, r, g, dim=args.dim, hidden=(64, 64), epochs=args.epochs, lr=5e-3,
        weight_decay=1e-4, batch=128, seed=args.seed,
    )  # fmt: skip
    meta = {"env": args.env, "env_config": args.env_config, "transitions": args.transitions}
    np.savez(args.out, **params, r2_r=r2_r, r2_g=r2_g, meta=json.dumps(meta))
    print(f"wrote {args.out}: d = {args.dim}, held-out R^2 r = {r2_r:.3f}, g = {r2_g:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
