"""Issue 26 item 4: each hyperparameter setting has its own run dirs (a Hydra grid never writes two
settings into one seed dir), and the report scores per task the setting with the best dev score
(BLURB's protocol), on hand-made records: aggregation as the suite's, ties, failed settings."""

import dataclasses

import pytest

from bio_roberta.finetuning.job import setting_of
from bio_roberta.finetuning.results import (
    MODEL_SELECTION,
    RESULT_SCHEMA,
    SETTING_ABBREVIATIONS,
    ResultRecordError,
    failed_runs,
    load_records,
    run_dir,
    run_setting,
    setting_name,
)
from bio_roberta.finetuning.sweep import compose_config, grid_overrides, hparams_grid
from bio_roberta.report import write_report
from bio_roberta.report.settings import NOT_PICKED, TUNED, UNTUNED, picked_settings
from bio_roberta.tasks.registry import get_task
from bio_roberta.tasks.spec import BLURB_GRID, Hyperparameters
from bio_roberta_core.provenance import atomic_write_json


def test_every_hyperparameter_has_a_short_name_in_setting_dirs():
    assert list(SETTING_ABBREVIATIONS) == [f.name for f in dataclasses.fields(Hyperparameters)]
    assert len(set(SETTING_ABBREVIATIONS.values())) == len(SETTING_ABBREVIATIONS)


def test_a_setting_names_what_differs_from_the_registry_and_the_registrys_keeps_todays_dir():
    registry = get_task("chemprot").hparams  # lr 2e-5, batch 16
    assert run_setting(registry, {"lr": 2e-5, "batch_size": None}) == {}
    assert run_dir("r", "chemprot", 10) == run_dir("r", "chemprot", 10, setting={})
    assert str(run_dir("r", "chemprot", 10, setting={})) == "r/chemprot/seed10"
    setting = run_setting(registry, {"batch_size": 32, "lr": 3e-5, "dropout": 0.1})
    assert setting == {"lr": 3e-5, "batch_size": 32}  # field order; dropout is the registry's
    assert setting_name(setting) == "lr3e-05-bs32"
    # result.json sorts its keys: the name keeps the fields' order
    assert setting_name({"batch_size": 32, "lr": 3e-5}) == "lr3e-05-bs32"
    assert str(run_dir("r", "gad", 7, 2, setting)) == "r/gad/lr3e-05-bs32/seed7/fold2"
    # repr keeps every float apart, where a rounded format would merge them
    assert setting_name({"lr": 1.00001e-5}) != setting_name({"lr": 1e-5})


def test_a_hydra_grid_of_two_lrs_gives_two_run_dirs():
    """The configs the sweep's Hydra multirun gives its jobs: one per lr, each its own dir."""
    overrides = ["hparams.lr=1e-5,3e-5", "hparams.batch_size=8", "max_update=4"]
    grid = hparams_grid(overrides)
    assert [(s["lr"], s["batch_size"]) for s in grid] == [(1e-5, 8), (3e-5, 8)]
    spec = get_task("ncbi-disease")  # registry lr 1e-5, batch 32
    base = ["task_name=ncbi-disease", "seed=10", "pretrained=p", "data_root=d", "results_dir=r"]
    dirs = {
        run_dir("r", spec.name, 10, setting=setting_of(compose_config([*base, lr, *rest]), spec))
        for lr in ("hparams.lr=1e-5", "hparams.lr=3e-5")
        for rest in [overrides[1:]]
    }
    assert {str(d) for d in dirs} == {
        "r/ncbi-disease/bs8/seed10",
        "r/ncbi-disease/lr3e-05-bs8/seed10",
    }


def test_blurbs_grid_as_sweep_overrides_a_users_axis_replaces_its_own():
    assert grid_overrides(BLURB_GRID, []) == [
        "hparams.lr=1e-05,3e-05,5e-05",
        "hparams.batch_size=16,32",
    ]
    assert len(hparams_grid(grid_overrides(BLURB_GRID, []))) == 6
    assert grid_overrides(BLURB_GRID, ["hparams.batch_size=8", "max_update=2"]) == [
        "hparams.lr=1e-05,3e-05,5e-05"
    ]


def test_overrides_hydra_refuses_are_a_one_line_usage_error():
    from bio_roberta.errors import UsageError

    with pytest.raises(UsageError, match=r"^Hydra overrides hparams.lrr=1: .*lrr"):
        hparams_grid(["hparams.lrr=1"])
    with pytest.raises(UsageError, match="Hydra overrides hparams.lr=1e-5,"):
        hparams_grid(["hparams.lr=1e-5,"])


def write(root, task, seed, setting=None, valid=None, test=None, status="ok", fold=None, **extra):
    """A result record in its setting's run dir."""
    record = {
        "schema": RESULT_SCHEMA,
        "task": task,
        "seed": seed,
        "fold": fold,
        "metric": "m",
        "status": status,
        "test_score": test,
        "valid_score": valid,
        "setting": setting or {},
        "error": None if status == "ok" else "boom",
        "log": None,
        **extra,
    }
    atomic_write_json(run_dir(root, task, seed, fold, setting) / "result.json", record)


LR3, LR5, BS32 = {"lr": 3e-5}, {"lr": 5e-5}, {"batch_size": 32}


def test_two_settings_of_one_run_are_two_records_and_a_copy_of_one_is_refused(tmp_path):
    write(tmp_path, "chemprot", 10, valid=0.5, test=0.5)
    write(tmp_path, "chemprot", 10, LR3, valid=0.6, test=0.4)
    assert {r.setting_name for r in load_records(tmp_path)} == {"", "lr3e-05"}
    copy = tmp_path / "old" / "chemprot" / "lr3e-05" / "seed10" / "result.json"
    copy.parent.mkdir(parents=True)
    copy.write_text((run_dir(tmp_path, "chemprot", 10, setting=LR3) / "result.json").read_text())
    with pytest.raises(ResultRecordError, match="a second record of chemprot lr3e-05 seed 10"):
        load_records(tmp_path)


def test_a_record_whose_setting_is_not_hyperparameters_is_refused(tmp_path):
    write(tmp_path, "chemprot", 10, valid=0.5, test=0.5)
    path = run_dir(tmp_path, "chemprot", 10) / "result.json"
    path.write_text(path.read_text().replace('"setting": {}', '"setting": {"lrr": 1}'))
    with pytest.raises(ResultRecordError, match=r"result.json: setting \{'lrr': 1\} is not an "):
        load_records(tmp_path)


def picks(tmp_path):
    records = load_records(tmp_path)
    scored, settings = picked_settings(records)
    return {task: found.picked for task, found in settings.items()}, scored, settings


def test_the_pick_aggregates_dev_as_the_suite_aggregates_test(tmp_path):
    """Seeds' dev scores 0.1, 0.9, 0.9 (median 0.9, mean 0.63) against 0.8 x3: a BLURB dataset
    (mean over runs, Table 6) picks the steady setting, a Lewis task (median, Table 2) the other;
    only the pick's runs are scored."""
    for task in ("biosses", "chemprot"):
        for seed, dev in zip((1, 2, 3), (0.1, 0.9, 0.9)):
            write(tmp_path, task, seed, LR3, valid=dev, test=0.2)
            write(tmp_path, task, seed, LR5, valid=0.8, test=0.7)
    picked, scored, settings = picks(tmp_path)
    assert picked == {"chemprot": "lr3e-05", "biosses": "lr5e-05"}
    assert {(r.task, r.setting_name) for r in scored} == {
        ("chemprot", "lr3e-05"),
        ("biosses", "lr5e-05"),
    }
    assert settings["biosses"].protocol == TUNED
    dev = {s.name: s.dev for s in settings["biosses"].settings}
    assert dev == pytest.approx({"lr3e-05": (0.1 + 0.9 + 0.9) / 3, "lr5e-05": 0.8})


def test_ties_go_to_more_seeds_then_the_registrys_setting_then_the_name(tmp_path):
    # ncbi-disease: equal means, but lr5e-05 has two seeds on dev, lr3e-05 one (the other failed)
    write(tmp_path, "ncbi-disease", 1, LR3, valid=0.7, test=0.1)
    write(tmp_path, "ncbi-disease", 2, LR3, status="failed")
    for seed in (1, 2):
        write(tmp_path, "ncbi-disease", seed, LR5, valid=0.7, test=0.2)
    # chemprot: the registry's setting ties with two others
    for setting in (None, LR3, BS32):
        write(tmp_path, "chemprot", 1, setting, valid=0.6, test=0.3)
    # ddi: no registry setting among the tied: the first name, bs32 < lr3e-05
    for setting in (LR3, BS32):
        write(tmp_path, "ddi", 1, setting, valid=0.6, test=0.3)
    picked, _, _ = picks(tmp_path)
    assert picked == {"ncbi-disease": "lr5e-05", "chemprot": "", "ddi": "bs32"}


def test_a_failed_setting_is_never_picked_and_all_failed_scores_nothing(tmp_path, capsys):
    # bc2gm: the better-looking setting failed on every seed (a failed record's dev is not read)
    write(tmp_path, "bc2gm", 1, LR3, valid=0.99, test=None, status="failed")
    write(tmp_path, "bc2gm", 1, LR5, valid=0.5, test=0.4)
    # jnlpba: every setting failed or unfinished
    write(tmp_path, "jnlpba", 1, LR3, status="failed")
    write(tmp_path, "jnlpba", 1, LR5, status="started")
    # gad: the model-selection fold's dev score is the seed's; a failed one makes no dev score
    write(tmp_path, "gad", 1, LR3, valid=0.8, test=0.8, fold=1, role=MODEL_SELECTION)
    write(tmp_path, "gad", 1, LR3, valid=None, test=0.9, fold=2, role="evaluation")
    write(tmp_path, "gad", 1, LR5, status="failed", fold=1, role=MODEL_SELECTION)
    write(tmp_path, "gad", 1, LR5, status="failed", fold=2, role="evaluation")
    picked, scored, settings = picks(tmp_path)
    assert picked == {"bc2gm": "lr5e-05", "jnlpba": None, "gad": "lr3e-05"}
    assert not [r for r in scored if r.task == "jnlpba"]
    assert {s.name: s.dev for s in settings["gad"].settings} == {"lr3e-05": 0.8, "lr5e-05": None}

    out = write_report(tmp_path, tmp_path / "report")
    markdown = out["markdown"].read_text()
    section = markdown.split("## Hyperparameter settings")[1].split("## Failed runs")[0]
    assert "| bc2gm | tuned on dev | lr3e-05 | lr=3e-05 |  | 0 |  |" in section
    assert "| bc2gm | tuned on dev | lr5e-05 | lr=5e-05 | 50.00 | 1 | picked |" in section
    assert f"| jnlpba | tuned on dev | lr3e-05 | lr=3e-05 |  | 0 | {NOT_PICKED} |" in section
    assert "| gad | tuned on dev | lr3e-05 | lr=3e-05 | 80.00 | 1 | picked |" in section
    lewis = {line.split("|")[1].strip(): line for line in markdown.splitlines() if "|" in line}
    assert "| 40.0" in lewis["BC2GM"] and "| 90.0" in lewis["GAD"]  # the picks' test scores


def test_one_setting_is_untuned_and_reported_as_such(tmp_path):
    for seed in (1, 2):
        write(tmp_path, "chemprot", seed, BS32, valid=0.1 * seed, test=0.5)
    picked, _, settings = picks(tmp_path)
    assert picked == {"chemprot": "bs32"} and settings["chemprot"].protocol == UNTUNED
    markdown = write_report(tmp_path, tmp_path / "report")["markdown"].read_text()
    assert f"{UNTUNED}: each task's runs have one setting" in markdown
    assert (
        "| chemprot | untuned (one setting) | bs32 | batch_size=32 | 15.00 | 2 | the only one |"
        in (markdown)
    )


def test_a_sweep_lists_each_settings_missing_or_failed_runs(tmp_path):
    """failed_runs (the sweep's exit status) looks for every setting of the grid in its own dir."""
    grid = hparams_grid(["hparams.lr=1e-5,3e-5,5e-5"])  # ncbi-disease's registry lr is 1e-5
    write(tmp_path, "ncbi-disease", 10, None, valid=0.5, test=0.5)
    write(tmp_path, "ncbi-disease", 10, LR3, status="failed")
    missing = run_dir(tmp_path, "ncbi-disease", 10, setting=LR5) / "result.json"
    # the registry's setting (lr 1e-5) finished in <task>/seed10: not listed
    assert failed_runs(tmp_path, ["ncbi-disease"], [10], grid) == [
        "ncbi-disease lr3e-05 seed 10: boom (stopped before training, no log)",
        (
            f"ncbi-disease lr5e-05 seed 10: no result record {missing} (the job's log is under "
            f"{tmp_path}/hydra)"
        ),
    ]


def test_a_logged_dev_score_keeps_every_digit_so_close_settings_do_not_tie(tmp_path):
    """Issue 42: the criteria logged their metrics rounded to 0.01 points, and a run's valid_score
    (read back from checkpoint_best) with them, so settings 0.004 apart tied and were split by
    name; the logged percentage is now the score itself, and the pick takes the better."""
    from fairseq.logging import metrics

    from user_dir.criterions._finetune_metrics import log_percentage

    with metrics.aggregate(new_root=True) as aggregate:
        log_percentage("micro_f1", lambda meters: 0.812345)
        assert aggregate.get_smoothed_values()["micro_f1"] == pytest.approx(81.2345, abs=1e-9)
    write(tmp_path, "ddi", 1, LR3, valid=0.81238, test=0.3)
    write(tmp_path, "ddi", 1, LR5, valid=0.81234, test=0.3)
    picked, _, _ = picks(tmp_path)
    assert picked == {"ddi": "lr3e-05"}


def test_tune_epochs_adds_blurbs_epoch_axis_to_the_grid_and_the_protocol_says_so(tmp_path):
    """Issue 42: BLURB tunes epochs over 2-60 (Gu et al. §6.2), our runs keep the best-dev
    checkpoint of one fixed-length schedule; `blurb-suite --tune --tune-epochs 2,10` makes
    max_epoch an axis of the grid (12 settings), refused without --tune or outside 2-60; the
    protocol line says which schedule the runs had."""
    import argparse

    from bio_roberta.blurb_run.run import sweep_overrides
    from bio_roberta.commands.blurb_suite import tune_epochs
    from bio_roberta.report.settings import fixed_schedule, schedule_text

    args = argparse.Namespace(tune=True, tune_epochs=tune_epochs("2,10"), overrides=[])
    overrides = sweep_overrides(args)
    assert overrides[-1] == "hparams.max_epoch=2,10"
    assert len(hparams_grid(overrides)) == 12
    assert sweep_overrides(argparse.Namespace(tune=False, tune_epochs=None, overrides=["a=1"])) == [
        "a=1"
    ]
    for text in ("1,10", "2,61", "2,2", "two"):
        with pytest.raises(argparse.ArgumentTypeError):
            tune_epochs(text)
    from bio_roberta.commands.blurb_suite import run as blurb_suite
    from bio_roberta.errors import UsageError

    untuned = argparse.Namespace(tune=False, tune_epochs=(2, 10))
    with pytest.raises(UsageError, match="^--tune-epochs adds an axis to BLURB's grid"):
        blurb_suite(untuned)
    # two settings of another max_epoch: the epochs were tuned on dev, the line says so
    write(tmp_path / "r", "gad-blurb", 1, {"max_epoch": 2}, valid=0.7, test=0.2)
    write(tmp_path / "r", "gad-blurb", 1, {"max_epoch": 10}, valid=0.8, test=0.3)
    _, _, settings = picks(tmp_path / "r")
    assert not fixed_schedule(settings)
    assert schedule_text(settings) == (
        "epochs tuned on dev as a grid axis, each run keeping its best-dev checkpoint"
    )
    write(tmp_path / "s", "gad-blurb", 1, LR3, valid=0.7, test=0.2)
    write(tmp_path / "s", "gad-blurb", 1, LR5, valid=0.8, test=0.3)
    assert fixed_schedule(picks(tmp_path / "s")[2])
