"""Lee et al. (FAccT 2026) figure analogues and claims from the sweep CSV.

Reads CSVs written by ``scripts/uncertainty_sweep.py`` (one row per configuration and
quarter) and writes, under ``--out-dir`` (default ``docs/results``):

* ``lee2026.md``: final-quarter disparities and cumulative profit per (setting, strategy)
  (mean over seeds, App. C's ``proportion_certain = 0.7``, ``delta = 0.05``), the Fig. 4/5
  rank tables, the spec 7.3 claims stated as reproduced or not with our numbers, and a
  distribution summary (Figs 11-14 analogue) of every configuration in the CSVs;
* ``lee2026_quarters.png``: per-quarter ``Delta SR`` and cumulative profit (Figs 2, 6-10
  analogues) in the no-bias and each max-severity single-bias setting;
* ``lee2026_final.csv``: the final-quarter table behind the markdown.

    python scripts/reproduce_lee2026.py results/lee2026_single_bias.csv \
        results/lee2026_naive_full.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KNOBS = ("l_y", "l_m_y", "l_h_r", "l_h_q", "l_m", "l_y_b")
STRATEGIES = ("naive", "naive_exploration", "prob_weighted", "uncertainty_aware", "counterfactual")
MAX_SETTINGS = {  # Figs 6-10: each bias at its maximum
    "no bias": {},
    "l_y=4": {"l_y": 4.0},
    "l_m_y=4": {"l_m_y": 4.0},
    "l_h_r=4": {"l_h_r": 4.0},
    "l_h_q=4": {"l_h_q": 4.0},
    "l_m=2": {"l_m": 2.0},
    "l_y_b=4": {"l_y_b": 4.0},
}


def setting_name(row) -> str:
    """``"no bias"`` or ``"knob=level"`` for single-knob rows, else ``"mixed"``."""
    on = [(k, row[k]) for k in KNOBS if row[k] != 0]
    if not on:
        return "no bias"
    if len(on) == 1:
        return f"{on[0][0]}={on[0][1]:g}"
    return "mixed"


def load(paths: list[str]) -> pd.DataFrame:
    """Every CSV concatenated, duplicates (same config and quarter) dropped."""
    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    df = df.drop_duplicates(["config_id", "quarter"])
    df["setting"] = df.apply(setting_name, axis=1)
    return df


def final_table(df: pd.DataFrame) -> pd.DataFrame:
    """Final quarter, App. C's pc/delta, single-bias settings: mean over seeds."""
    last = df[df["quarter"] == df["quarter"].max()]
    last = last[(last["proportion_certain"] == 0.7) & (last["delta"] == 0.05)]
    last = last[last["setting"] != "mixed"]
    for m in ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc"):
        last = last.assign(**{f"abs_{m}": last[m].abs()})
    cols = ["abs_delta_sr", "abs_delta_fpr", "abs_delta_fnr", "abs_delta_acc", "cumulative_profit"]
    agg = last.groupby(["setting", "strategy"])[cols].mean()
    agg["n_seeds"] = last.groupby(["setting", "strategy"]).size()
    return agg.reset_index()


def ranks(table: pd.DataFrame, metric: str, ascending: bool) -> pd.DataFrame:
    """Rank of each strategy per setting (1 = best; ties share the lowest rank)."""
    wide = table.pivot(index="setting", columns="strategy", values=metric)
    wide = wide[[s for s in STRATEGIES if s in wide.columns]]
    return wide.rank(axis=1, method="min", ascending=ascending).astype("Int64")


def _md(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = [floatfmt.format(v) if isinstance(v, float) else str(v) for v in row.values]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def claims(table: pd.DataFrame) -> list[str]:
    """Spec 7.3 claims 1-4 and the Fig. 2/3 vs App. C profit tension, with numbers."""
    t = table.set_index(["setting", "strategy"])
    out = []

    def get(setting, strategy, col):
        try:
            return float(t.loc[(setting, strategy), col])
        except KeyError:
            return float("nan")

    sr = {s: get("no bias", s, "abs_delta_sr") for s in STRATEGIES}
    prof = {s: get("no bias", s, "cumulative_profit") for s in STRATEGIES}
    ok1a = all(v < 0.05 for v in sr.values())
    spread = (max(prof.values()) - min(prof.values())) / max(prof.values())
    out.append(
        f"1. No bias: all final |dSR| < 0.05: **{'reproduced' if ok1a else 'not reproduced'}** "
        f"({', '.join(f'{k} {v:.3f}' for k, v in sr.items())}); profits within 15 %: "
        f"**{'reproduced' if spread <= 0.15 else 'not reproduced'}** (spread {spread:.1%}: "
        f"{', '.join(f'{k} {v:.1f}' for k, v in prof.items())})."
    )
    a, b = get("l_m_y=4", "counterfactual", "abs_delta_sr"), get("l_m_y=4", "naive", "abs_delta_sr")
    out.append(
        f"2. l_m_y = 4: counterfactual final |dSR| < naive's: "
        f"**{'reproduced' if a < b else 'not reproduced'}** ({a:.3f} vs {b:.3f})."
    )
    a, b = get("l_m=2", "counterfactual", "abs_delta_sr"), get("l_m=2", "naive", "abs_delta_sr")
    out.append(
        f"3. l_m = 2 (proxy): counterfactual final |dSR| >= naive's: "
        f"**{'reproduced' if a >= b else 'not reproduced'}** ({a:.3f} vs {b:.3f})."
    )
    wins = []
    for name in ("l_y=4", "l_m_y=4", "l_h_r=4", "l_h_q=4", "l_m=2", "l_y_b=4"):
        pw, nv = (
            get(name, "prob_weighted", "cumulative_profit"),
            get(name, "naive", "cumulative_profit"),
        )
        wins.append((name, pw, nv))
    k = sum(pw >= nv for _, pw, nv in wins)
    out.append(
        f"4. prob-weighted cumulative profit >= naive's in >= 4 of 6 max-severity settings: "
        f"**{'reproduced' if k >= 4 else 'not reproduced'}** ({k}/6: "
        + ", ".join(f"{n} {pw:.1f} vs {nv:.1f}" for n, pw, nv in wins)
        + ")."
    )
    cf_last = []
    for name in MAX_SETTINGS:
        row = [get(name, s, "cumulative_profit") for s in STRATEGIES]
        if not np.all(np.isnan(row)):
            cf_last.append(get(name, "counterfactual", "cumulative_profit") <= np.nanmin(row))
    gap = [
        (get(n, "naive", "cumulative_profit") - get(n, "counterfactual", "cumulative_profit"))
        / get(n, "naive", "cumulative_profit")
        for n in ("no bias", "l_y=4", "l_m_y=4")
    ]
    if sum(cf_last) >= len(cf_last) / 2:
        verdict = "App. C's side holds"
    elif max(gap) < 0.05:
        verdict = "Fig. 2/3's side holds"
    else:
        verdict = "neither side holds fully (a real cost, but not the least profitable)"
    out.append(
        "Profit tension (Fig. 2/3 'little to no cost' vs App. C 'consistently least "
        f"profitable'): counterfactual is the least profitable in {sum(cf_last)}/{len(cf_last)} "
        f"max-severity settings; its profit gap to naive is "
        f"{', '.join(f'{g:.1%}' for g in gap)} (no bias, l_y=4, l_m_y=4), so "
        f"**{verdict}** under our choices."
    )
    return out


def plot_quarters(df: pd.DataFrame, path: Path) -> bool:
    """Per-quarter mean Delta SR and cumulative profit per strategy (Figs 2, 6-10)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sub = df[(df["proportion_certain"] == 0.7) & (df["delta"] == 0.05)]
    names = [n for n in MAX_SETTINGS if n in set(sub["setting"])]
    if not names:
        return False
    fig, axes = plt.subplots(2, len(names), figsize=(3.0 * len(names), 5.5), squeeze=False)
    for j, name in enumerate(names):
        part = sub[sub["setting"] == name]
        for strategy in STRATEGIES:
            s = part[part["strategy"] == strategy]
            if s.empty:
                continue
            m = s.groupby("quarter")[["delta_sr", "cumulative_profit"]].mean()
            axes[0, j].plot(m.index, m["delta_sr"], marker=".", label=strategy)
            axes[1, j].plot(m.index, m["cumulative_profit"], marker=".", label=strategy)
        axes[0, j].set_title(name)
        axes[0, j].axhline(0.0, color="grey", lw=0.5)
        axes[1, j].set_xlabel("quarter")
    axes[0, 0].set_ylabel("Delta SR = SR(0) - SR(1)")
    axes[1, 0].set_ylabel("cumulative profit")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_rank_heatmaps(table: pd.DataFrame, path: Path) -> bool:
    """Figs 4-5 analogue: rank of |Delta SR| and of cumulative profit, setting x strategy."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = [
        ("rank of |Delta SR| (1 = fairest)", ranks(table, "abs_delta_sr", True)),
        ("rank of cumulative profit (1 = most)", ranks(table, "cumulative_profit", False)),
    ]
    if panels[0][1].empty:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.35 * len(panels[0][1]) + 2.2))
    for ax, (title, wide) in zip(axes, panels):
        values = wide.to_numpy(dtype=float)
        ax.imshow(values, cmap="viridis_r", aspect="auto")
        ax.set_xticks(range(wide.shape[1]), list(wide.columns), rotation=30, ha="right")
        ax.set_yticks(range(wide.shape[0]), list(wide.index), fontsize=7)
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                if values[i, j] == values[i, j]:  # not NaN
                    ax.text(j, i, f"{int(values[i, j])}", ha="center", va="center", fontsize=7)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_violins(df: pd.DataFrame, path: Path) -> bool:
    """Figs 11-14 analogue: final-quarter |Delta M| over the single-bias configurations."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    last = df[(df["quarter"] == df["quarter"].max()) & (df["proportion_certain"] == 0.7)]
    last = last[(last["delta"] == 0.05) & (last["setting"] != "mixed")]
    names = [s for s in STRATEGIES if s in set(last["strategy"])]
    if not names:
        return False
    metrics = ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc")
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 3.4), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        data = [last.loc[last["strategy"] == n, m].abs().dropna().to_numpy() for n in names]
        keep = [(n, d) for n, d in zip(names, data) if len(d) > 1]
        if not keep:
            continue
        ax.violinplot([d for _, d in keep], showmedians=True)
        ax.set_xticks(range(1, len(keep) + 1), [n for n, _ in keep], rotation=35, ha="right")
        ax.set_title(f"final |{m}|", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def distribution(df: pd.DataFrame, full_grid: bool) -> pd.DataFrame:
    """Figs 11-14 analogue: final-quarter |dM| quantiles per strategy.

    ``full_grid=False``: the single-bias settings every strategy ran; ``True``: every knob
    combination, for the strategies that ran the whole grid (pc 0.7, delta 0.05), over
    the configurations they share.
    """
    last = df[(df["quarter"] == df["quarter"].max()) & (df["proportion_certain"] == 0.7)]
    last = last[last["delta"] == 0.05]
    key = [*KNOBS, "seed"]
    if full_grid:
        sizes = last.groupby("strategy").size()
        keep = sizes[sizes > 1000].index
        last = last[last["strategy"].isin(keep)]
    else:
        last = last[last["setting"] != "mixed"]
    if last.empty:
        return pd.DataFrame()
    shared = last.groupby(key)["strategy"].transform("nunique") == last["strategy"].nunique()
    last = last[shared]
    rows = []
    for strategy, part in last.groupby("strategy"):
        row = {"strategy": strategy, "configs": len(part)}
        for m in ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc"):
            q = part[m].abs().quantile([0.25, 0.5, 0.75]).to_numpy()
            row[f"abs {m} median [IQR]"] = f"{q[1]:.3f} [{q[0]:.3f}, {q[2]:.3f}]"
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Writes the markdown, the PNG and the final-quarter CSV."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", help="sweep CSVs")
    p.add_argument("--out-dir", default="docs/results")
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df = load(args.csv)
    table = final_table(df)
    table.to_csv(out / "lee2026_final.csv", index=False)
    plotted = plot_quarters(df, out / "lee2026_quarters.png")
    heat = plot_rank_heatmaps(table, out / "lee2026_ranks.png")
    violins = plot_violins(df, out / "lee2026_violins.png")
    md = [
        "# Lee et al. (FAccT 2026): sweep results",
        "",
        "Generated by `scripts/reproduce_lee2026.py` from "
        + ", ".join(f"`{Path(c).name}`" for c in args.csv)
        + f" ({df['config_id'].nunique()} configurations, {len(df)} rows; "
        "`scripts/uncertainty_sweep.py`). Final quarter (Q8), `proportion_certain = 0.7`, "
        "`delta = 0.05`, mean over seeds; `Delta M = M(0) - M(1)`, group 0 biased.",
        "",
        "## Claims (spec 7.3)",
        "",
        *claims(table),
        "",
        "## Final quarter per setting and strategy",
        "",
        _md(table),
        "",
        "## Fig. 4 analogue: rank of |Delta SR| (1 = smallest)",
        "",
        _md(ranks(table, "abs_delta_sr", True).reset_index()),
        "",
        "## Fig. 5 analogue: rank of cumulative profit (1 = largest)",
        "",
        _md(ranks(table, "cumulative_profit", False).reset_index()),
        "",
        "## Figs 11-14 analogue: final |Delta M| (median [IQR])",
        "",
        "Single-bias settings (no bias + each knob alone), every strategy:",
        "",
        _md(distribution(df, full_grid=False)),
        "",
    ]
    wide = distribution(df, full_grid=True)
    if not wide.empty:
        md += [
            "Every knob combination (3^6 x seeds, pc 0.7, delta 0.05), the strategies that "
            "ran the whole grid:",
            "",
            _md(wide),
            "",
        ]
    if plotted:
        md += ["![per-quarter Delta SR and cumulative profit](lee2026_quarters.png)", ""]
    if heat:
        md += ["![rank heatmaps, Figs 4-5 analogue](lee2026_ranks.png)", ""]
    if violins:
        md += ["![final |Delta M| per strategy, Figs 11-14 analogue](lee2026_violins.png)", ""]
    (out / "lee2026.md").write_text("\n".join(md))
    print(f"wrote {out / 'lee2026.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
