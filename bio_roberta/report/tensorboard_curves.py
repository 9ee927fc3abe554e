"""Loss and learning rate against updates of pretraining and distillation runs (training_curves.png
of the demo and the report), read from the TensorBoard event files fairseq writes.

configs/pretrain/base.yaml (and so configs/distill/) sets common.tensorboard_logdir to
<save dir>/tensorboard; fairseq writes one subdir per progress-bar tag there: train_inner every
log_interval updates, train at each epoch's end, valid at each validation, each with a scalar per
logged meter ("loss", "lr", ...) at step = num_updates. These files are read here rather than
fairseq's text log, whose format (json or simple) is a config choice; and without TensorBoard or
TensorFlow: an event file is a TFRecord file (per record: u64 length, u32 CRC, data, u32 CRC)
of Event protobufs (step = field 2, summary = field 5: values = field 1, each with tag = field 1
and simple_value = field 2).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.protobuf import protobuf_fields

LOGDIR = "tensorboard"  # beside the checkpoints: configs/pretrain/base.yaml
TRAIN, VALID = "train_inner", "valid"


class CurvesError(BioRobertaError):
    """A log dir without TensorBoard event files (names the dir)."""


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """The CRC a TFRecord stores after a record's length and after its data (CRC-32C, masked)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_records(path: Path) -> list[bytes]:
    """The records of one event file. A last record cut short (a run still writing) ends it; a
    length whose CRC does not match, or a record that is no Event, is a CurvesError naming the
    file and the byte offset (a corrupt file is not an empty one). Only the lengths' CRCs are
    checked: the data's would cost seconds per MB in Python."""
    data, position, records = path.read_bytes(), 0, []
    while position + 12 <= len(data):
        length_bytes = data[position : position + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (crc,) = struct.unpack_from("<I", data, position + 8)
        if crc != masked_crc32c(length_bytes):
            raise CurvesError(
                f"{path}: not a TensorBoard event file, or corrupt at byte {position:,} (a record "
                "length fails its CRC); remove it or pass another run"
            )
        record = data[position + 12 : position + 12 + length]
        if len(record) < length:
            break
        records.append(record)
        position += 12 + length + 4
    return records


def read_scalars(tag_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Scalar name -> [(step, value)] in step order, over the event files in one tag's dir."""
    scalars: dict[str, dict[int, float]] = {}
    for path in sorted(tag_dir.glob("events.out.tfevents.*")):
        for number, record in enumerate(event_records(path), 1):
            try:
                event = protobuf_fields(record)
                step = event.get(2, [0])[0]
                for summary in event.get(5, []):
                    for value in protobuf_fields(summary).get(1, []):
                        fields = protobuf_fields(value)
                        if 1 in fields and 2 in fields:
                            (scalar,) = struct.unpack("<f", fields[2][0])
                            scalars.setdefault(fields[1][0].decode("utf-8"), {})[step] = scalar
            except (KeyError, IndexError, struct.error, UnicodeDecodeError, TypeError) as error:
                raise CurvesError(
                    f"{path}: record {number} is not a TensorBoard Event ({error!r}); the file is "
                    "corrupt: remove it or pass another run"
                ) from None
    return {name: sorted(points.items()) for name, points in scalars.items()}


def run_logdir(path: str | os.PathLike) -> Path:
    """A run's TensorBoard log dir: path itself, or <path>/tensorboard for a save dir."""
    path = Path(path)
    logdir = path / LOGDIR if (path / LOGDIR).is_dir() else path
    if not list(logdir.glob(f"{TRAIN}/events.out.tfevents.*")):
        if not fairseq_writes_events():
            raise CurvesError(
                f"{path}: no TensorBoard events in {logdir / TRAIN}: fairseq writes them only "
                "with tensorboardX (or tensorboard) installed, and neither is installed here; "
                "install the tensorboard extra (scripts/install.sh --extras tensorboard, README: "
                "Install) and train again"
            )
        raise CurvesError(
            f"{path}: no TensorBoard events in {logdir / TRAIN}; train with "
            "common.tensorboard_logdir set (configs/pretrain/base.yaml sets <save dir>/tensorboard)"
        )
    return logdir


def fairseq_writes_events() -> bool:
    """Whether fairseq can write TensorBoard events here: it imports a SummaryWriter from
    torch.utils.tensorboard, else tensorboardX, and without either only warns
    (fairseq/logging/progress_bar.py) and writes none, whatever tensorboard_logdir says."""
    try:
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        try:
            import tensorboardX  # noqa: F401
        except ImportError:
            return False
    return True


def run_name(logdir: Path) -> str:
    """The run's save dir name (the log dir's parent when the log dir is <save dir>/tensorboard)."""
    return logdir.parent.name if logdir.name == LOGDIR else logdir.name


def curves_figure(runs: list[str | os.PathLike]):
    """One panel per run (save dir or log dir): training loss (every logged update) and validation
    loss against updates, the learning rate on a second axis (a matplotlib Figure)."""
    from bio_roberta.report.figures import pyplot

    logdirs = [run_logdir(run) for run in runs]
    height = 3.9 * len(logdirs)
    figure, panels = pyplot().subplots(len(logdirs), 1, figsize=(7, height), squeeze=False)
    for axes, logdir in zip(panels[:, 0], logdirs):
        train = read_scalars(logdir / TRAIN)
        valid = read_scalars(logdir / VALID) if (logdir / VALID).is_dir() else {}
        for points, style, label in ((train, "-", "train loss"), (valid, "o-", "valid loss")):
            if "loss" in points:
                steps, values = zip(*points["loss"])
                axes.plot(steps, values, style, label=label)
        axes.set_title(f"{run_name(logdir)} ({logdir})", fontsize="medium")
        axes.set_xlabel("updates")
        axes.set_ylabel("loss as fairseq logs it (base 2)")
        handles = axes.get_legend_handles_labels()
        if "lr" in train:
            steps, values = zip(*train["lr"])
            rate = axes.twinx()
            rate.plot(steps, values, ":", color="tab:gray", label="learning rate")
            rate.set_ylabel("learning rate (dotted)")
            handles = tuple(a + b for a, b in zip(handles, rate.get_legend_handles_labels()))
        # below the panel, where it hides no point (inside, it covered a run's last validation)
        axes.legend(
            *handles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.22),
            ncol=3,
            fontsize="small",
            frameon=False,
        )
    figure.suptitle("Training curves: loss and learning rate against updates")
    figure.tight_layout()
    return figure
