"""Training curves: a pretraining run through scripts/pretrain.sh logs to TensorBoard beside its
checkpoints (configs/pretrain/base.yaml) without fairseq's "Please install tensorboardX" notice;
`bio-roberta curves` and the report plot its loss against updates from those event files, whose
values are the ones fairseq's own log prints."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.report import write_report
from bio_roberta.report.tensorboard_curves import TRAIN, read_scalars
from conftest import REPO_ROOT
from test_report import write

BIN = Path(sys.executable).parent
PNG = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pretrained(tiny_databin, tmp_path_factory):
    """(save dir, output) of 8 tiny-recipe updates through scripts/pretrain.sh."""
    save = tmp_path_factory.mktemp("curves") / "pretrain"
    run = subprocess.run(
        [REPO_ROOT / "scripts" / "pretrain.sh", tiny_databin, save, "tiny"]
        + ["optimization.max_update=8", "dataset.validate_interval_updates=4"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "GPUS": "0"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return save, run.stdout + run.stderr


def test_pretraining_logs_its_curves_to_tensorboard_quietly(pretrained):
    save, output = pretrained
    assert "tensorboardX" not in output and "tensorboard not found" not in output
    logged = [float(x) for x in re.findall(r"\[train_inner\].* loss=([\d.]+),", output)]
    curve = read_scalars(save / "tensorboard" / "train_inner")
    assert [step for step, _ in curve["loss"]] == list(range(1, 9))
    assert [value for _, value in curve["loss"]] == pytest.approx(logged, abs=1e-4)
    assert [step for step, _ in read_scalars(save / "tensorboard" / "valid")["loss"]] == [4, 8]


def test_the_legend_hides_no_point(pretrained):
    """Issue 43: the legend sat in the panel's upper right, over the demo's distilled run's one
    validation point; it is below the panel now, and names the learning rate too."""
    from bio_roberta.report.tensorboard_curves import curves_figure

    save, _ = pretrained
    figure = curves_figure([save])
    figure.canvas.draw()
    axes = figure.axes[0]
    legend = axes.get_legend()
    assert legend.get_window_extent().y1 <= axes.get_window_extent().y0
    assert [text.get_text() for text in legend.get_texts()] == [
        "train loss",
        "valid loss",
        "learning rate",
    ]


def test_curves_command_and_report_plot_the_run(pretrained, tmp_path):
    save, _ = pretrained
    png = tmp_path / "curves.png"
    run = subprocess.run(
        [BIN / "bio-roberta", "curves", save, "--out", png], capture_output=True, text=True
    )
    assert run.returncode == 0 and png.read_bytes()[:8] == PNG, run.stderr[-3000:]

    results = tmp_path / "results"
    write(results, "ncbi-disease", 10, 0.8, pretrained=str(save / "checkpoint_last.pt"))
    paths = write_report(results, tmp_path / "report")
    assert paths["curves"].read_bytes()[:8] == PNG
    assert (
        f"`training_curves.png`: loss and learning rate against updates of {save}"
        in paths["markdown"].read_text()
    )

    missing = subprocess.run(
        [BIN / "bio-roberta", "curves", tmp_path, "--out", png], capture_output=True, text=True
    )
    assert missing.returncode == 2 and missing.stderr.strip().splitlines() == [
        (
            f"bio-roberta curves: error: {tmp_path}: no TensorBoard events in "
            f"{tmp_path / 'train_inner'}; train with common.tensorboard_logdir set "
            "(configs/pretrain/base.yaml sets <save dir>/tensorboard)"
        )
    ]

    # a corrupt event file is refused naming it (it was plotted as an empty run, exit 0)
    corrupt = tmp_path / "corrupt"
    shutil.copytree(save / "tensorboard", corrupt)
    (events,) = (corrupt / TRAIN).glob("events.out.tfevents.*")
    events.write_bytes(bytes(range(256)) * 4)
    run = subprocess.run(
        [BIN / "bio-roberta", "curves", corrupt, "--out", png], capture_output=True, text=True
    )
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        (
            f"bio-roberta curves: error: {events}: not a TensorBoard event file, or corrupt at "
            "byte 0 (a record length fails its CRC); remove it or pass another run"
        )
    ]

    # --out naming a dir is one line (it was a traceback)
    run = subprocess.run(
        [BIN / "bio-roberta", "curves", save, "--out", tmp_path], capture_output=True, text=True
    )
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        (
            f"bio-roberta curves: error: --out {tmp_path}: a directory; give the PNG file to "
            f"write, e.g. {tmp_path / 'training_curves.png'}"
        )
    ]


def test_without_tensorboardx_curves_says_it_is_missing_not_the_path(tmp_path, monkeypatch):
    """Without tensorboardX (and tensorboard) fairseq writes no events whatever
    tensorboard_logdir says: `curves` blamed the run dir's settings; it names the missing
    package and the extra to install. The missing imports are simulated (None in sys.modules)."""
    from bio_roberta.report.tensorboard_curves import CurvesError, run_logdir

    (tmp_path / "tensorboard").mkdir()
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(CurvesError) as refused:
        run_logdir(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path}: no TensorBoard events in {tmp_path / 'tensorboard' / TRAIN}: fairseq "
        "writes them only with tensorboardX (or tensorboard) installed, and neither is installed "
        "here; install the tensorboard extra (scripts/install.sh --extras tensorboard, README: "
        "Install) and train again"
    )
    monkeypatch.delitem(sys.modules, "tensorboardX")  # installed: the run dir is to blame
    with pytest.raises(CurvesError, match="train with common.tensorboard_logdir set"):
        run_logdir(tmp_path)
