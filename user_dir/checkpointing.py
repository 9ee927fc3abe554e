"""Checkpoints that are whole or absent, a resume that survives a damaged checkpoint_last.pt, and a
training clock of its own for a run that starts from another model's weights.

fairseq 0.12 saves checkpoint_<epoch>_<updates>.pt through a fixed-name .tmp file without fsync,
then copies it over checkpoint_last.pt and checkpoint_best.pt in place
(fairseq/checkpoint_utils.py): a kill during that copy (a preemption; seconds for a large model with
optimizer state) leaves a truncated checkpoint_last.pt, the previous one gone, and the next run dies
in torch.load. Importing the plugin (user_dir/__init__.py) changes fairseq's checkpointing in these
places only:
  * torch_persistent_save and the copies of save_checkpoint (its PathManager.copy) write through a
    temporary file in the same directory, fsynced and renamed into place (local paths; others as
    fairseq does);
  * Trainer.load_checkpoint: when save_dir's checkpoint_last.pt cannot be read, or is missing
    beside other checkpoints (a kill during the first save), it resumes from the newest
    checkpoint in save_dir that can be read, with a warning naming both; it removes the temporary
    files of writes that were killed; a restart whose settings differ from those the checkpoint was
    saved with (COMPARED_SETTINGS) warns naming each (old -> new), and weights that do not fit
    the model are refused in one line (CheckpointError); and when the meters are reset (the run
    starts from another model's weights: checkpoint.finetune_from_model, or --restore-file with
    --reset-meters) it resets fairseq's cumulative training clock too, so
    optimization.stop_time_hours counts this run's time;
  * Trainer.save_checkpoint records the path and sha256 of the dict.txt the model is trained with
    (extra_state["dictionary"]; `bio-roberta export-hf` checks its vocabulary against it), and a
    student built from its teacher's layers records them (extra_state["student_init"]);
  * load_checkpoint_to_cpu reports a file it cannot load as a one-line CheckpointError naming it;
  * checkpoint_utils.load_checkpoint refuses a first launch whose checkpoint.finetune_from_model is
    still WEIGHTS_REQUIRED, the value of recipes that start from another model's weights
    (continue_roberta, train_longer, continue_modernbert, modernbert_long, distillation): Hydra's
    `???` cannot mark it, since OmegaConf keeps fairseq's default null over it, and the run would
    start from random weights (a student built from its teacher's layers, task.student_layers,
    needs none and is refused others); and one whose data's dict.txt is not the dictionary of the
    weights it starts from (bio_roberta_core.model_dictionary.checkpoint_dictionaries), in one
    line naming both: the embedding rows would be read as other tokens (a vocabulary of another
    size fails to load anyway, one of the same size would train on).
For tests: BIO_ROBERTA_KILL_AT=checkpoint-written:<file name> makes the process SIGKILL itself while
it writes that checkpoint file, all its bytes written but not yet in place (provenance.kill_point).
"""

import argparse
import contextlib
import copy
import glob
import logging
import os
import shutil

import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager
from fairseq.trainer import Trainer
from omegaconf import DictConfig, OmegaConf, open_dict

from bio_roberta_core.checkpoints import CheckpointError, read_checkpoint
from bio_roberta_core.model_dictionary import (
    checkpoint_dictionaries,
    dictionary_record,
    first_difference,
    load_model_dictionary,
    training_dictionary,
)
from bio_roberta_core.provenance import NO_ROOM, atomic_file, kill_point, sha256_file

logger = logging.getLogger(__name__)

COPY_BUFFER = 16 << 20
# checkpoint.finetune_from_model in recipes whose first launch must be given the weights to start
# from (configs/pretrain/recipe/continue_roberta.yaml, train_longer.yaml).
WEIGHTS_REQUIRED = "<required: checkpoint.finetune_from_model=the checkpoint to start from>"
# What a restart compares with the config its checkpoint was saved with (None: every key of the
# section); the lengths, paths and logging of a run may change on a restart without a word.
COMPARED_SETTINGS = {
    "model": None,
    "task": None,
    "criterion": None,
    "optimizer": None,
    "lr_scheduler": None,
    "optimization": ("lr", "update_freq", "clip_norm", "sentence_avg"),
    "dataset": ("batch_size", "max_tokens", "required_batch_size_multiple", "train_subset"),
}
# copies of optimization.lr that fairseq keeps in other sections, and machine-specific switches
UNCOMPARED_SETTINGS = {
    "optimizer.lr",
    "lr_scheduler.lr",
    "optimizer.tpu",
    "criterion.tpu",
    "task.data",
}
_fairseq = {}  # fairseq's own functions, which ours call


@contextlib.contextmanager
def checkpoint_file(path: str):
    """A handle whose bytes replace path whole when the block ends
    (bio_roberta_core.provenance.atomic_file). Out of room, the run ends with one line naming the
    file (SystemExit: fairseq's loop lets it through), the checkpoints before it left intact."""
    written = 0
    try:
        with atomic_file(path) as handle:
            try:
                yield handle
                handle.flush()
            finally:
                written = _position(handle)
            kill_point(f"checkpoint-written:{os.path.basename(path)}")
    except (OSError, RuntimeError) as error:  # torch.save's zip writer adds a RuntimeError
        no_room = _no_room(error)
        if no_room is None:
            raise
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
        raise SystemExit(
            f"fairseq-train: error: {path}: {no_room.strerror}: the checkpoint needed more than "
            f"the {written:,} bytes written ({free:,} bytes free on that file system); nothing "
            "was put in its place and the checkpoints before it are intact: make room (or raise "
            "the limit) and run the same command again to resume"
        ) from None


def _no_room(error: BaseException | None) -> OSError | None:
    """The out-of-room OSError behind error (itself, or what it was raised in handling)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in NO_ROOM:
            return error
        error = error.__cause__ or error.__context__
    return None


def _position(handle) -> int:
    try:
        return handle.tell()
    except (OSError, ValueError):
        return 0


def torch_persistent_save(obj, filename, async_write: bool = False):
    """fairseq's, with the file fsynced under a unique temporary name before it is renamed into
    place."""
    if async_write or not PathManager.supports_rename(filename):
        return _fairseq["torch_persistent_save"](obj, filename, async_write)
    with checkpoint_file(filename) as handle:
        torch.save(obj, handle)


class CheckpointPathManager(PathManager):
    """fairseq's PathManager as checkpoint_utils sees it: copies (checkpoint_last.pt,
    checkpoint_best.pt) appear whole or not at all."""

    @staticmethod
    def copy(src_path: str, dst_path: str, overwrite: bool = False) -> bool:
        if not PathManager.supports_rename(dst_path):
            return PathManager.copy(src_path, dst_path, overwrite)
        with open(src_path, "rb") as source, checkpoint_file(dst_path) as target:
            shutil.copyfileobj(source, target, COPY_BUFFER)
        return True


def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
    """fairseq's, with a file it cannot load (missing, cut short, refused by the allowlist) named in
    one line."""
    try:
        return _fairseq["load_checkpoint_to_cpu"](path, arg_overrides, load_on_all_ranks)
    except Exception as error:  # noqa: BLE001 - whatever fails, the file is what the user must fix
        raise CheckpointError.unreadable(path, error) from None


def newest_intact(save_dir: str, name: str) -> str | None:
    """The checkpoint in save_dir with name's suffix (checkpoint_last<suffix>.pt), other than name,
    that can be read and has the most updates (of equals, the one written first: the original
    rather than its copies); None when there is none."""
    intact = {}
    for path in glob.glob(os.path.join(save_dir, f"checkpoint*{name[len('checkpoint_last') :]}")):
        if os.path.basename(path) == name:
            continue
        try:
            history = read_checkpoint(path, mmap=True).get("optimizer_history") or [{}]
        except CheckpointError as error:
            logger.warning("not resuming from it either: %s", error)
            continue
        intact[path] = (history[-1].get("num_updates", 0), -os.path.getmtime(path))
    return max(intact, key=intact.get) if intact else None


def resume_file(save_dir: str, filename: str) -> str:
    """filename, unless it is save_dir's checkpoint_last*.pt and is missing (a run killed during
    its first checkpoint save: checkpoint_<epoch>_<updates>.pt is written before it is copied to
    checkpoint_last.pt) or cannot be read: then save_dir's newest intact checkpoint
    (newest_intact); a missing one with no other checkpoint is a first launch."""
    name = os.path.basename(filename)
    if not name.startswith("checkpoint_last") or os.path.abspath(
        os.path.dirname(filename)
    ) != os.path.abspath(save_dir):
        return filename
    if os.path.isfile(filename):
        try:
            read_checkpoint(filename, mmap=True)
            return filename
        except CheckpointError as error:
            why = str(error)
    else:
        why = f"{filename}: missing (a run killed during its first checkpoint save?)"
    newest = newest_intact(save_dir, name)
    if newest is None:
        if os.path.isfile(filename):
            raise CheckpointError(
                f"{why}; no other checkpoint in {save_dir} can be read: "
                "move it away to start afresh"
            )
        return filename
    logger.warning(
        "%s; resuming from %s, the newest intact checkpoint in %s", why, newest, save_dir
    )
    return newest


def remove_killed_writes(save_dir: str) -> None:
    """The temporary files of checkpoint writes that were killed (checkpoint_file) are never resumed
    from."""
    for path in glob.glob(os.path.join(save_dir, ".checkpoint*.pt.*.tmp")):
        logger.info("removing %s, a checkpoint write that did not finish", path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def settings(section) -> dict:
    """A config section as a dict: fairseq keeps the model's as an argparse Namespace for
    architectures registered the legacy way."""
    if isinstance(section, argparse.Namespace):
        return vars(section)
    if isinstance(section, DictConfig):
        return OmegaConf.to_container(section, resolve=True, enum_to_str=True)
    return section or {}


def changed_settings(saved_cfg, cfg) -> list[str]:
    """ "section.key old -> new" for each setting in COMPARED_SETTINGS that differs between the
    config a checkpoint was saved with and this run's."""
    if not saved_cfg:
        return []  # written before fairseq's dataclass configs (args only)
    # a legacy architecture's Namespace holds every option of the run: the model's are the others
    elsewhere = {key for name in cfg if name != "model" for key in settings(cfg.get(name))}
    changes = []
    for section, keys in COMPARED_SETTINGS.items():
        saved, current = settings(saved_cfg.get(section)), settings(cfg.get(section))
        for key in keys or sorted(set(saved) | set(current)):
            if (
                f"{section}.{key}" in UNCOMPARED_SETTINGS
                or (section == "model" and key in elsewhere)
                or saved.get(key) == current.get(key)
            ):
                continue
            changes.append(f"{section}.{key} {saved.get(key)!r} -> {current.get(key)!r}")
    return changes


def load_checkpoint(
    self,
    filename,
    reset_optimizer=False,
    reset_lr_scheduler=False,
    optimizer_overrides=None,
    reset_meters=False,
):
    """Trainer.load_checkpoint past a damaged or missing checkpoint_last.pt, with the clock reset
    with the meters; a restart with changed settings warns naming each, and weights that do not fit
    this run's model are refused in one line."""
    save_dir = self.cfg.checkpoint.save_dir
    if self.data_parallel_rank == 0:
        remove_killed_writes(save_dir)
    filename = resume_file(save_dir, filename)
    saved_cfg = (
        read_checkpoint(filename, mmap=True).get("cfg") if os.path.isfile(filename) else None
    )
    changes = changed_settings(saved_cfg, self.cfg)
    restart = os.path.abspath(os.path.dirname(filename)) == os.path.abspath(save_dir)
    if changes and restart and not reset_optimizer:
        logger.warning(
            "resuming from %s with changed settings: %s (the run goes on with the new ones)",
            filename,
            "; ".join(changes),
        )
    try:
        extra_state = _fairseq["load_checkpoint"](
            self,
            filename,
            reset_optimizer,
            reset_lr_scheduler,
            optimizer_overrides,
            reset_meters=reset_meters,
        )
    except Exception as error:
        if not str(error).startswith("Cannot load model parameters"):
            raise
        cause = [line.strip() for line in str(error.__context__).splitlines() if line.strip()]
        why = "; ".join(c for c in changes if c.startswith("model.")) or (cause or ["?"])[-1][:300]
        raise CheckpointError(
            f"{filename}: its weights do not fit this run's model ({why}): train with the "
            "architecture it was saved with, or start in another save_dir"
        ) from None
    if reset_meters:
        self._previous_training_time = 0
    return extra_state


def check_start_dictionary(checkpoint: str, data: str) -> None:
    """Refuse to start from checkpoint's weights on data whose dict.txt is another dictionary
    than the checkpoint's (the same entries with other counts pass); say so when the checkpoint's
    cannot be found."""
    ours = training_dictionary(data)
    if not ours.is_file():
        return  # fairseq's task says so itself
    candidates = checkpoint_dictionaries(checkpoint, read_checkpoint(checkpoint, mmap=True))
    theirs = next((path for path in candidates if path.is_file()), None)
    if theirs is None:
        logger.warning(
            "%s: its dictionary is not here (looked at %s): %s is not checked against it",
            checkpoint,
            ", ".join(map(str, candidates)),
            ours,
        )
        return
    if sha256_file(ours) == sha256_file(theirs):
        return
    data_dictionary, model_dictionary = load_model_dictionary(ours), load_model_dictionary(theirs)
    if data_dictionary.symbols != model_dictionary.symbols:
        raise CheckpointError(
            f"{ours} is not the dictionary of {checkpoint} ({theirs}): "
            f"{first_difference(data_dictionary, model_dictionary)}; its embedding rows would be "
            "read as other tokens: binarize the corpus with the checkpoint's vocabulary dir "
            "(bio-roberta binarize --vocab; for an import-hf model, its output dir)"
        )


def load_training_checkpoint(cfg, trainer, **passthrough_args):
    """checkpoint_utils.load_checkpoint, refusing a first launch without the weights its recipe
    starts from. A restart resumes from save_dir's checkpoint_last.pt, as fairseq does, or, when a
    kill left none, from the newest intact checkpoint (resume_file): fairseq would take that for a
    first launch and start again from checkpoint.finetune_from_model."""
    last = os.path.join(cfg.save_dir, f"checkpoint_last{trainer.checkpoint_suffix}.pt")
    first_launch = (
        cfg.restore_file == "checkpoint_last.pt"
        and not os.path.exists(last)
        and newest_intact(cfg.save_dir, os.path.basename(last)) is None
    )
    student_layers = getattr(trainer.cfg.task, "student_layers", "")
    given = cfg.finetune_from_model if first_launch else None
    start = None if student_layers else given
    if student_layers and given and given != WEIGHTS_REQUIRED:
        raise CheckpointError(
            f"task.student_layers={student_layers} builds the student from the teacher's layers,"
            f" and checkpoint.finetune_from_model={given} would replace them: give one of the two"
        )
    if start == WEIGHTS_REQUIRED:
        raise CheckpointError(
            "this recipe starts from another model's weights: give "
            "checkpoint.finetune_from_model=<checkpoint.pt> (continue_roberta: the model.pt of "
            "`bio-roberta learn-vocab --checkpoint`; continue_modernbert: of `bio-roberta "
            "import-hf`; modernbert_long: the modernbert run's checkpoint_last.pt; "
            "train_longer and distillation: the base model's checkpoint_best.pt, or a student "
            "built from the teacher's layers: task.student_layers, the student6 and student4 "
            f"recipes); {last} does not exist, so this is not a restart"
        )
    if start and os.path.isfile(start):
        check_start_dictionary(start, trainer.cfg.task.data)
    restart = cfg.restore_file == "checkpoint_last.pt" and not first_launch
    if cfg.finetune_from_model and (restart or student_layers):
        cfg = copy.deepcopy(cfg)
        with open_dict(cfg):
            # a restart's weights come from save_dir, a student's from its teacher's layers
            cfg.finetune_from_model = None
    return _fairseq["load_training_checkpoint"](cfg, trainer, **passthrough_args)


def save_checkpoint(self, filename, extra_state):
    """Trainer.save_checkpoint, with the training dictionary's path and sha256 in extra_state, and
    the teacher and layers a distillation student was built from."""
    data = getattr(self.cfg.task, "data", None)
    dictionary = dictionary_record(data) if data else None
    student_init = getattr(self.task, "student_init", None)
    records = {"dictionary": dictionary, **({"student_init": student_init} if student_init else {})}
    return _fairseq["save_checkpoint"](self, filename, {**extra_state, **records})


def install() -> None:
    """Route fairseq's checkpoint writing and loading through this module (once;
    user_dir/__init__.py)."""
    if _fairseq:
        return
    _fairseq.update(
        torch_persistent_save=checkpoint_utils.torch_persistent_save,
        load_checkpoint_to_cpu=checkpoint_utils.load_checkpoint_to_cpu,
        load_training_checkpoint=checkpoint_utils.load_checkpoint,
        load_checkpoint=Trainer.load_checkpoint,
        save_checkpoint=Trainer.save_checkpoint,
    )
    checkpoint_utils.torch_persistent_save = torch_persistent_save
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu
    checkpoint_utils.load_checkpoint = load_training_checkpoint
    checkpoint_utils.PathManager = CheckpointPathManager
    Trainer.load_checkpoint = load_checkpoint
    Trainer.save_checkpoint = save_checkpoint
