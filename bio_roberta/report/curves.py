"""The report's training-curves section: the pretrained checkpoints its runs fine-tuned, plotted
from the TensorBoard logs beside them (bio_roberta/report/tensorboard_curves.py), or why there is no
plot."""

from __future__ import annotations

from typing import Optional

from bio_roberta.finetuning.results import ResultRecord
from bio_roberta.report.figures import figure_png
from bio_roberta.report.seed_results import pretrained_paths


def training_curves(
    records: list[ResultRecord], file_name: str
) -> tuple[list[str], Optional[bytes]]:
    """The section's lines, naming the PNG file_name, and the PNG (None when no checkpoint has
    TensorBoard logs beside it)."""
    from bio_roberta.report.tensorboard_curves import LOGDIR, curves_figure

    runs = [path.parent for path in pretrained_paths(records)]
    logged = [run for run in runs if (run / LOGDIR).is_dir()]
    lines = ["## Training curves", ""]
    if not logged:
        where = ", ".join(str(run / LOGDIR) for run in runs) or "no pretrained checkpoint recorded"
        return lines + [f"none: no TensorBoard logs ({where})"], None
    lines.append(
        f"`{file_name}`: loss and learning rate against updates of {', '.join(map(str, logged))}"
    )
    return lines, figure_png(curves_figure(logged))
