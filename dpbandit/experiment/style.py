"""One visual style for every dpbandit figure: distinct series, neutral references, legends that fit.

* **Series** get a (colour, line style, marker) triple from :func:`series_styles`: Paul Tol's colour-blind-safe
  "muted" palette (9 colours) and the 4 hues of his "vibrant" one that differ from them (13 colours), crossed with
  4 line styles, colours varying fastest: the first 13 series have 13 colours, and the first 52 are pairwise
  distinct (a colour returns only with another dash pattern; the OCO runner's default grid needs 24).
* **References** (uniform random play, non-private baselines shown next to private agents) are drawn in neutral
  styles from :data:`REFERENCE_STYLES`, never a palette colour, so they cannot be mistaken for an agent, and each
  reference has its own: black dotted patterns are random play's alone (one pattern per random series); the
  non-private references take greys crossed with dash patterns (24 distinct; an oracle is never dotted like random).
* **Legends** with more than :data:`LEGEND_INSIDE_MAX` entries go outside the axes (:func:`place_legend`), and
  figures are saved with a tight bounding box so nothing is cut off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["PALETTE", "LINESTYLES", "MARKERS", "REFERENCE_STYLES", "LEGEND_INSIDE_MAX", "reference_kind",
           "series_styles", "place_legend"]

#: Paul Tol's "muted" qualitative scheme (colour-blind safe; https://personal.sron.nl/~pault/).
PALETTE: tuple[str, ...] = ("#332288", "#CC6677", "#117733", "#DDCC77", "#88CCEE", "#882255", "#44AA99",
                            "#999933", "#AA4499", "#EE7733", "#0077BB", "#EE3377", "#CC3311")
#: Line styles crossed with the palette (solid, dashed, dash-dot, long dash-dot-dot).
LINESTYLES: tuple = ("-", (0, (5, 2)), (0, (6, 2, 1, 2)), (0, (8, 2, 1, 2, 1, 2)))
#: Markers, one per line style (for figures with points, e.g. the frontier).
MARKERS: tuple[str, ...] = ("o", "s", "^", "D")
_GREYS = ("0.45", "0.6", "0.3", "0.7")
_DASHES = ((0, (3, 1, 1, 1)), (0, (4, 3)), (0, (6, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (8, 2, 2, 2)), (0, (2, 2)))
_REFERENCE_MARKERS = ("+", "1", "2", "3", "4", "x")
#: Neutral styles of the reference kinds, one per reference in order: random play (black, dotted patterns no other
#: series uses) and the non-private references (greys x dash patterns, greys varying slowest: 24 distinct).
REFERENCE_STYLES: dict[str, tuple[dict, ...]] = {
    "random": ({"color": "black", "linestyle": (0, (1, 1.5)), "marker": "x"},
               {"color": "black", "linestyle": (0, (1, 4)), "marker": "+"},
               {"color": "black", "linestyle": (0, (1, 1, 1, 4)), "marker": "1"}),
    "non-private": tuple({"color": grey, "linestyle": dash, "marker": _REFERENCE_MARKERS[i]}
                         for grey in _GREYS for i, dash in enumerate(_DASHES)),
}
#: Legends with more entries than this are placed outside the axes.
LEGEND_INSIDE_MAX = 8
_RANDOM_LABELS = ("random", "uniform random")


def reference_kind(label: str, private: Mapping[str, bool] | None = None) -> str | None:
    """``"random"`` for uniform random play, ``"non-private"`` for a non-private series shown next to private ones
    (``private`` maps labels to whether the run is private; only given when the figure has private series), else
    None (an ordinary series). More references of a kind than it has styles (3 random, 24 non-private) draw the
    rest as ordinary series rather than repeat a reference's style."""
    if label.split(" (")[0].strip().lower() in _RANDOM_LABELS:
        return "random"
    if private is not None and any(private.values()) and not private.get(label, False):
        return "non-private"
    return None


def series_styles(labels: Iterable[str], private: Mapping[str, bool] | None = None) -> dict[str, dict]:
    """label -> matplotlib keywords ``color``, ``linestyle``, ``marker`` (and ``reference``: the reference kind or
    None). Series take the palette x line-style cycle in order; references take the neutral styles."""
    styles, k, used = {}, 0, {"random": 0, "non-private": 0}
    for label in dict.fromkeys(labels):
        kind = reference_kind(label, private)
        if kind is not None and used[kind] < len(REFERENCE_STYLES[kind]):
            options = REFERENCE_STYLES[kind]
            styles[label] = {**options[used[kind] % len(options)], "reference": kind}
            used[kind] += 1
            continue
        n = len(PALETTE)
        styles[label] = {"color": PALETTE[k % n], "linestyle": LINESTYLES[(k // n) % len(LINESTYLES)],
                         "marker": MARKERS[(k // n) % len(MARKERS)], "reference": None}
        k += 1
    return styles


def place_legend(ax, n_entries: int, *, inside: str = "upper left", outside: bool | None = None) -> None:
    """Inside the axes at ``inside`` for a short legend; outside on the right for a long one (more than
    :data:`LEGEND_INSIDE_MAX` entries) or when ``outside`` is True."""
    if outside or (outside is None and n_entries > LEGEND_INSIDE_MAX):
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small",
                  ncol=1 if n_entries <= 24 else 2)
    else:
        ax.legend(loc=inside, fontsize="small")
