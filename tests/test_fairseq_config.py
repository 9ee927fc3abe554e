"""bio_roberta/finetuning/fairseq_config.py: fairseq-train's config of every kind's fine-tuning
command line, composed from the options that differ from their defaults only, is the config
fairseq's convert_namespace_to_omegaconf composes from all of them: the same keys, values and
types."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bio_roberta.finetuning import command_line
from bio_roberta.finetuning.command_line import fairseq_options, hyperparameters
from bio_roberta.finetuning.fairseq_config import default_overrides, fairseq_config
from bio_roberta.finetuning.pretrained_model import PretrainedModel
from bio_roberta.finetuning.sweep_config import SweepConfig
from bio_roberta.tasks.kinds import KINDS
from bio_roberta.tasks.registry import TASKS

# (kind, architecture, updates fixed by a model-selection fold): every kind with a RoBERTa, the
# token and sentence heads with a ModernBERT, and an evaluation fold's command line
CASES = [(kind, "roberta_tiny", None) for kind in KINDS]
CASES += [("ner", "modernbert_tiny", None), ("relation", "modernbert_tiny", None)]
CASES += [("relation", "roberta_tiny", 7)]


def fine_tuning_args(kind: str, arch: str, fixed_updates, tmp_path: Path, monkeypatch):
    """fairseq's parsed command line of a run of the registry's first task of that kind."""
    from fairseq import options

    spec = next(spec for spec in TASKS.values() if spec.kind == kind)
    cfg = SweepConfig(
        task_name=spec.name,
        pretrained=str(tmp_path / "pretrained.pt"),
        data_root=str(tmp_path),
        results_dir=str(tmp_path / "results"),
        cpu=True,
    )
    monkeypatch.setattr(command_line, "train_examples", lambda data_dir: 100)
    line = fairseq_options(
        cfg,
        spec,
        hyperparameters(spec, cfg.hparams),
        tmp_path / spec.name,
        tmp_path / "checkpoints",
        fixed_updates,
        PretrainedModel({}, ["--arch", arch], 64),
    )
    return options.parse_args_and_arch(options.get_training_parser(), input_args=line)


@pytest.mark.parametrize("kind, arch, fixed_updates", CASES)
def test_the_config_is_fairseq_s_own(kind, arch, fixed_updates, tmp_path, monkeypatch):
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf, override_module_args
    from hydra.core.config_store import ConfigStore

    from bio_roberta.finetuning.in_process_train import fairseqs_hydra

    args = fine_tuning_args(kind, arch, fixed_updates, tmp_path, monkeypatch)
    store = ConfigStore.instance()
    every_node = store.repo
    with fairseqs_hydra():
        ours = fairseq_config(args)
        assert store.repo is every_node  # the store is whole again after the composition
        fairseqs = convert_namespace_to_omegaconf(args)
    # repr: 1 and 1.0, "1" and 1 differ
    assert repr(OmegaConf.to_container(ours)) == repr(OmegaConf.to_container(fairseqs))
    assert OmegaConf.is_struct(ours)
    # what the composition was spared: most of the ~250 overrides restate a default; those that
    # remain are the run's own options (its task, lr, batch size, ...)
    overrides, _ = override_module_args(args)
    changed = [o for o in overrides if o not in default_overrides(args)]
    assert len(changed) < len(overrides) / 3
    assert f"optimization.lr=[{args.lr[0]}]" in changed and f"task._name={args.task}" in changed
