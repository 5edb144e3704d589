"""Plots of grouped trials (matplotlib, part of the install; drawn off-screen).

The reward-vs-gap frontier per environment (mean +- std per configuration, the
Pareto-optimal ones joined), the gap and return curves over training (mean over seeds),
the frontier of one sweep folder and the frontier of a reproduction script's CSV.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rllib_fair.cli.results import RETURN_KEY, STEPS_KEY, finite_number
from rllib_fair.cli.tables import iters, pareto, point
from rllib_fair.cli.trials import Configuration, final

_MARKERS = "osD^vPXh<>p*"


def _config_point(ax, i: int, x, y, xerr, yerr, **kwargs) -> None:
    """One configuration's mean +- std as a hollow marker.

    Shapes change and sizes grow with ``i``, so configurations at the same point (and a
    trial's dot under its configuration) all stay visible.
    """
    ax.errorbar(
        x,
        y,
        xerr=xerr,
        yerr=yerr,
        fmt=_MARKERS[i % len(_MARKERS)],
        markersize=5 + 2 * (i % 5),
        markerfacecolor="none",
        markeredgewidth=1.5,
        capsize=3,
        **kwargs,
    )


def _finish(fig, ax, env: str, what: str, path: Path, legend: bool = True) -> None:
    """Two-line title (env, then what is plotted), legend beside the axes, saved uncut."""
    ax.set_title(f"{env}\n{what}", fontsize=10)
    if legend:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.savefig(path, dpi=100, bbox_inches="tight")


def plot_pareto(
    configs: list[Configuration], rows: list[dict], front: list[bool], path: Path, last: int
) -> Path:
    """``pareto.png`` of one sweep: every trial as a dot, each configuration's mean +- std."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for c in configs:  # every trial
        xs = [final(t, f"fairness/{c.notion}/bias", last) for t in c.trials]
        ys = [final(t, t.own.env_reward.key if t.own else RETURN_KEY, last) for t in c.trials]
        pts = [(x, y) for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
        if pts:
            ax.scatter(*zip(*pts, strict=True), s=10, color="0.6", zorder=1)
    ax.scatter([], [], s=10, color="0.6", label="trials (one seed each)")
    done = {"front": False, "other": False}
    for i, (r, on) in enumerate(zip(rows, front, strict=True)):
        pt = point(r)
        if pt is None:
            continue
        kind = "front" if on else "other"
        _config_point(
            ax,
            i,
            pt[1],
            pt[0],
            r["gap"][r["notion"]][1],
            r["return"][1],
            color="tab:red" if on else "tab:blue",
            zorder=3 if on else 2,
            label=None if done[kind] else ("Pareto front" if on else "other configurations"),
        )
        done[kind] = True
    line = sorted((point(r) for r, on in zip(rows, front, strict=True) if on), key=lambda p: p[1])
    if len(line) > 1:
        ax.plot([p[1] for p in line], [p[0] for p in line], "--", color="tab:red", lw=1)
    notion = rows[0]["notion"] if rows else "?"
    ax.set_xlabel(f"gap ({notion}), lower is fairer")
    ax.set_ylabel(f"episode return ({iters(last)})")
    env = rows[0]["env"] if rows else "?"
    _finish(fig, ax, env, "reward vs gap per configuration (mean +- std over seeds)", path)
    plt.close(fig)
    return path


def plot(configs: list[Configuration], rows: list[dict], out: Path) -> list[Path]:
    """Writes ``frontier_<env>.png`` and ``curves_<env>.png``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    envs = sorted({r["env"] for r in rows})
    for env in envs:
        sel = [(c, r) for c, r in zip(configs, rows, strict=True) if r["env"] == env]
        safe = env.replace("/", "_")
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        pts, labels = [], []
        for i, (c, r) in enumerate(sel):
            gap = r["gap"].get(c.notion, (None, None, 0))
            ret = r["return"]
            if gap[0] is None or ret[0] is None:
                continue
            _config_point(ax, i, gap[0], ret[0], gap[1], ret[1], label=c.label)
            pts.append((ret[0], gap[0]))
            labels.append(c.label)
        front = sorted((pts[i] for i in pareto(pts)), key=lambda p: p[1])
        if len(front) > 1:
            ax.plot([p[1] for p in front], [p[0] for p in front], "k--", lw=1, label="Pareto front")
        notion = sel[0][0].notion if sel else "?"
        ax.set_xlabel(f"gap ({notion}), lower is fairer")
        ax.set_ylabel(f"episode return ({iters(sel[0][1]['last'])})")
        path = out / f"frontier_{safe}.png"
        _finish(
            fig, ax, env, "reward vs fairness gap (mean +- std over seeds)", path, legend=bool(pts)
        )
        plt.close(fig)
        written.append(path)

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for c, r in sel:
            for ax, key, name in (
                (axes[0], f"fairness/{c.notion}/bias", f"gap ({c.notion})"),
                (axes[1], r["return_key"], "episode return"),
            ):
                curves = []
                for t in c.trials:
                    xs = [finite_number(row.get(STEPS_KEY)) or 0.0 for row in t.rows]
                    ys = [finite_number(row.get(key)) for row in t.rows]
                    curves.append((xs, ys))
                n = min(len(xs) for xs, _ in curves)
                x = np.array(curves[0][0][:n])
                ys = np.array([[np.nan if v is None else v for v in ys[:n]] for _, ys in curves])
                if np.all(np.isnan(ys)):
                    continue
                with np.errstate(all="ignore"):
                    ax.plot(x, np.nanmean(ys, axis=0), label=c.label)
                ax.set_xlabel("env steps")
                ax.set_ylabel(name)
        axes[0].set_title(f"{env}: gap over training", fontsize=10)
        axes[1].set_title(f"{env}: return over training", fontsize=10)
        axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        path = out / f"curves_{safe}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


# ------------------------------------------------------------------ run tables (CSV)


def plot_run_table(
    summary: list[dict], keys: list[str], ret: str, gap: str, out: Path
) -> list[str]:
    """``frontier_<env>.png`` of a reproduction script's CSV summary, one per env (or cell).

    Args:
        summary: the configurations (``key``: their non-numeric columns; per metric a
            :func:`rllib_fair.cli.trials.mean_std` triple).
        keys: the non-numeric columns.
        ret: the column plotted as the return (y).
        gap: the column plotted as the gap (x).
        out: the folder written to.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    env_key = next((k for k in ("env", "cell") if k in keys), None)
    for env in sorted({s["key"].get(env_key) for s in summary}):
        sel = [s for s in summary if s["key"].get(env_key) == env]
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        pts = []
        for i, s in enumerate(sel):
            (g, gs, _), (r, rs, _) = s[gap], s[ret]
            if g is None or r is None:
                continue
            label = ", ".join(str(v) for k, v in s["key"].items() if k != env_key)
            _config_point(ax, i, g, r, gs, rs, label=label)
            pts.append((r, g))
        front = sorted((pts[i] for i in pareto(pts)), key=lambda p: p[1])
        if len(front) > 1:
            ax.plot([p[1] for p in front], [p[0] for p in front], "k--", lw=1, label="Pareto front")
        ax.set_xlabel(f"{gap} (lower is fairer)")
        ax.set_ylabel(ret)
        path = out / f"frontier_{str(env).replace('/', '_')}.png"
        _finish(
            fig,
            ax,
            str(env),
            f"{ret} vs {gap} (mean +- std over seeds)",
            path,
            legend=bool(pts),
        )
        plt.close(fig)
        figures.append(str(path))
    return figures
