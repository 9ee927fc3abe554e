"""The report's and the training curves' figures: drawn off-screen, written as PNG."""

from __future__ import annotations

import io


def pyplot():
    """matplotlib.pyplot drawing off-screen (Agg): figures here are only written to files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_png(figure) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot().close(figure)
    return buffer.getvalue()
