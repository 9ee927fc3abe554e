"""fairseq's own resume from checkpoint_last.pt works under torch's weights_only default once the
plugin is imported, and the allowlist admits nothing beyond what fairseq checkpoints hold.
Checkpoint files appear whole or not at all: a run killed while writing one resumes from the
previous one, a damaged checkpoint_last.pt is passed over for the newest intact checkpoint, and
unreadable files end the run with one line naming them (user_dir/checkpointing.py)."""

import os
import pickle
import re
import signal
import subprocess
import sys

import pytest
import torch

from bio_roberta_core.checkpoints import read_checkpoint
from conftest import error_line
from tiny_training import train_masked_lm

EVERY_2_UPDATES = [
    "--save-interval-updates",
    "2",
]  # checkpoint_1_<N>.pt, then copied to checkpoint_last.pt


def train(databin, save_dir, max_update, *options, env=None, preexec_fn=None):
    return train_masked_lm(
        databin,
        save_dir,
        max_update,
        "--log-interval",
        "1",
        "--seed",
        "3",
        *options,
        env=env,
        check=False,
        preexec_fn=preexec_fn,
    )


def trained_log(databin, save_dir, max_update, *options) -> str:
    """The output of a run that must end well."""
    run = train(databin, save_dir, max_update, *options)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    return log


def assert_loaded(log: str, checkpoint: str, updates: int) -> None:
    """fairseq said it resumed from `checkpoint` (epoch 1) after `updates` updates."""
    loaded = rf"Loaded checkpoint .*{re.escape(checkpoint)} \(epoch 1 @ {updates} updates\)"
    assert re.search(loaded, log), log[-3000:]


def logged_updates(log: str) -> list[int]:
    return [int(n) for n in re.findall(r"num_updates=(\d+)", log)]


def resumed_log(databin, save_dir, max_update, *options, why: str, checkpoint: str) -> str:
    """The output of a run that passed over checkpoint_last.pt (`why`) to resume from `checkpoint`,
    after checking that it said so."""
    log = trained_log(databin, save_dir, max_update, *options)
    assert (
        f"{save_dir}/checkpoint_last.pt: {why}; resuming from {save_dir}/{checkpoint}, the newest "
        f"intact checkpoint in {save_dir}"
    ) in log
    return log


def updates_of(path) -> int:
    return read_checkpoint(path)["optimizer_history"][-1]["num_updates"]


def killed_writes(save_dir):
    return sorted(save_dir.glob(".checkpoint*.tmp"))


def test_resume_from_checkpoint_last_continues_at_the_right_update(tiny_databin, tmp_path):
    trained_log(tiny_databin, tmp_path, 4)
    log = trained_log(tiny_databin, tmp_path, 8)
    assert_loaded(log, "checkpoint_last.pt", 4)
    updates = logged_updates(log)
    assert updates[0] == 5 and updates[-1] == 8, updates


def test_stock_torch_load_rejects_the_checkpoint_without_the_allowlist(tiny_databin, tmp_path):
    """The failure the plugin fixes is real: a fresh interpreter without it cannot load the file."""
    assert train(tiny_databin, tmp_path, 2).returncode == 0
    probe = subprocess.run(
        [sys.executable, "-c", f"import torch; torch.load('{tmp_path}/checkpoint_last.pt')"],
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0 and "weights_only" in probe.stderr


class NotAllowlisted:
    pass


def test_allowlist_still_rejects_other_globals(tmp_path):
    import bio_roberta_core.checkpoints  # noqa: F401

    path = tmp_path / "evil.pt"
    torch.save({"payload": NotAllowlisted()}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)


def test_a_run_killed_while_writing_checkpoint_last_resumes_from_the_previous_one(
    tiny_databin, tmp_path
):
    """fairseq copied checkpoint_1_6.pt over checkpoint_last.pt in place: a kill during the copy (a
    preemption) left it truncated, the previous one gone. The hook kills the run at that point."""
    assert train(tiny_databin, tmp_path, 4, *EVERY_2_UPDATES).returncode == 0
    killed = train(
        tiny_databin,
        tmp_path,
        8,
        *EVERY_2_UPDATES,
        env={"BIO_ROBERTA_KILL_AT": "checkpoint-written:checkpoint_last.pt"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (
        updates_of(tmp_path / "checkpoint_last.pt") == 4
        and updates_of(tmp_path / "checkpoint_1_6.pt") == 6
    )
    assert len(killed_writes(tmp_path)) == 1

    log = trained_log(tiny_databin, tmp_path, 8, *EVERY_2_UPDATES)
    assert_loaded(log, "checkpoint_last.pt", 4)
    assert logged_updates(log)[-1] == 8
    assert updates_of(tmp_path / "checkpoint_last.pt") == 8 and not killed_writes(tmp_path)


def test_resume_passes_over_an_unreadable_checkpoint_last_for_the_newest_intact_one(
    tiny_databin, tmp_path
):
    assert train(tiny_databin, tmp_path, 4, *EVERY_2_UPDATES).returncode == 0
    (tmp_path / "checkpoint_last.pt").write_bytes(
        b""
    )  # what a kill during fairseq's in-place copy left
    log = resumed_log(
        tiny_databin,
        tmp_path,
        6,
        *EVERY_2_UPDATES,
        why="empty (0 bytes), a write that was cut short; use another checkpoint",
        checkpoint="checkpoint_1_4.pt",
    )
    assert_loaded(log, "checkpoint_1_4.pt", 4)
    assert logged_updates(log) == [5, 6]
    assert updates_of(tmp_path / "checkpoint_last.pt") == 6

    for path in tmp_path.glob("checkpoint*.pt"):
        path.write_bytes(path.read_bytes()[:1000])
    stopped = train(tiny_databin, tmp_path, 8, *EVERY_2_UPDATES)
    assert error_line(stopped, 1) == (
        f"error: {tmp_path}/checkpoint_last.pt: truncated, or not a fairseq checkpoint "
        "(RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
        f"directory); no other checkpoint in {tmp_path} can be read: move it away to start afresh"
    )


class RunsACommand:
    def __reduce__(self):
        return os.system, ("echo pwned",)


def test_an_unreadable_restore_file_ends_the_run_with_one_line(tiny_databin, tmp_path):
    hostile = tmp_path / "hostile.pt"
    torch.save({"model": {}, "payload": RunsACommand()}, hostile)
    run = train(tiny_databin, tmp_path / "run", 2, "--restore-file", hostile)
    assert "pwned" not in run.stdout
    assert error_line(run, 1) == (
        f"error: {hostile}: refused to load: it holds the global posix.system, which no "
        "fairseq checkpoint does (only the types in bio_roberta_core/checkpoints.py load); "
        "use checkpoints you trust"
    )


@pytest.mark.parametrize("start", ["random weights", "finetune_from_model"])
def test_a_run_killed_during_its_first_checkpoint_save_resumes_from_that_checkpoint(
    tiny_databin, tiny_roberta_checkpoint, tmp_path, start
):
    """Killed after checkpoint_1_2.pt was written, while it was copied to checkpoint_last.pt: no
    checkpoint_last.pt. fairseq took that for a first launch and trained from update 0 (from
    checkpoint.finetune_from_model again, when the run started from another model's weights)."""
    options = [*EVERY_2_UPDATES]
    if start == "finetune_from_model":
        options += ["--finetune-from-model", tiny_roberta_checkpoint]
    killed = train(
        tiny_databin,
        tmp_path,
        4,
        *options,
        env={"BIO_ROBERTA_KILL_AT": "checkpoint-written:checkpoint_last.pt"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not (tmp_path / "checkpoint_last.pt").exists()
    assert updates_of(tmp_path / "checkpoint_1_2.pt") == 2

    log = resumed_log(
        tiny_databin,
        tmp_path,
        4,
        *options,
        why="missing (a run killed during its first checkpoint save?)",
        checkpoint="checkpoint_1_2.pt",
    )
    assert "No existing checkpoint found" not in log
    assert logged_updates(log) == [3, 4]
    assert updates_of(tmp_path / "checkpoint_last.pt") == 4


def test_a_restart_with_changed_settings_names_each_and_refuses_another_architecture(
    tiny_databin, tmp_path
):
    assert train(tiny_databin, tmp_path, 2).returncode == 0
    changed_flags = ["--lr", "2e-3", "--mask-prob", "0.2", "--batch-size", "16"]
    changed_flags += ["--weight-decay", "0.01"]
    log = trained_log(tiny_databin, tmp_path, 4, *changed_flags)
    assert (
        f"resuming from {tmp_path}/checkpoint_last.pt with changed settings: task.mask_prob 0.15 "
        "-> 0.2; optimizer.weight_decay 0.0 -> 0.01; optimization.lr [0.001] -> [0.002]; "
        "dataset.batch_size 8 -> 16 (the run goes on with the new ones)"
    ) in log
    same = train(tiny_databin, tmp_path, 6, *changed_flags)
    assert same.returncode == 0 and "changed settings" not in same.stdout + same.stderr

    other_model = train(tiny_databin, tmp_path, 8, "--encoder-layers", "3")
    assert error_line(other_model, 1) == (
        f"error: {tmp_path}/checkpoint_last.pt: its weights do not fit this run's model "
        "(model.encoder_layers 2 -> 3): train with the architecture it was saved with, or start "
        "in another save_dir"
    )


def test_a_full_disk_at_a_checkpoint_save_is_one_line_and_the_same_command_resumes(
    tiny_databin, tmp_path
):
    """Out of room while writing a checkpoint (RLIMIT_FSIZE gives EFBIG, as a full disk gives
    ENOSPC): one line naming the file, no temporary file left, the earlier checkpoints intact, and
    the same command with room resumes from them."""
    from test_output_dir import limit_file_size

    first = train(tiny_databin, tmp_path, 2, *EVERY_2_UPDATES)
    assert first.returncode == 0, first.stderr[-3000:]
    size = (tmp_path / "checkpoint_last.pt").stat().st_size
    full = train(tiny_databin, tmp_path, 4, *EVERY_2_UPDATES, preexec_fn=limit_file_size(size // 2))
    last = error_line(full, 1)  # SystemExit with the message
    assert re.fullmatch(
        rf"fairseq-train: error: {re.escape(str(tmp_path))}/checkpoint_1_4\.pt: File too large: "
        r"the checkpoint needed more than the [\d,]+ bytes written \([\d,]+ bytes free on that "
        r"file system\); nothing was put in its place .* run the same command again to resume",
        last,
    ), last
    assert not killed_writes(tmp_path) and not (tmp_path / "checkpoint_1_4.pt").exists()
    assert updates_of(tmp_path / "checkpoint_last.pt") == 2
    resumed = train(tiny_databin, tmp_path, 4, *EVERY_2_UPDATES)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert updates_of(tmp_path / "checkpoint_last.pt") == 4
