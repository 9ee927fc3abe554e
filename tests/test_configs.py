"""Every training config and recipe composes as `bio-roberta pretrain` / `distill` compose it
(fairseq-hydra-train --cfg job), holds the paper's values (docs/recipe.md), and each recipe changes
exactly what it says; every component it names is registered and takes the keys it is given.
The model: torchtune's tests/recipes/test_configs.py.

To extend: a new recipe file fails test_every_recipe_is_checked until RECIPE_CHANGES says what it
changes. Another config (fine-tuning's, say) adds to COMPOSE the command that prints its job
config (its Hydra app with --cfg job) and to BASE_VALUES what it must hold; the checks of fairseq
components and batch sizes apply to the FAIRSEQ_TRAINING configs."""

from __future__ import annotations

import subprocess
import sys
from argparse import ArgumentParser
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

import pytest
import yaml
from fairseq import criterions, models, optim, tasks
from fairseq.optim import lr_scheduler

import user_dir  # noqa: F401  (registers the plugin's tasks, criteria, models, schedulers)
from conftest import REPO_ROOT, USER_DIR
from user_dir.checkpointing import WEIGHTS_REQUIRED

CONFIGS = REPO_ROOT / "configs"
GPUS_PER_NODE = 8  # the configs' batch_size x update_freq is for one 8-GPU node
SEQUENCES_PER_UPDATE = 8192  # the paper's batch; ModernBERT's recipes state their own
MODERNBERT_SEQUENCES_PER_UPDATE = {
    "modernbert": 4608,  # ModernBERT-base at 1,024 tokens
    "modernbert_long": 576,  # at 8,192 tokens
    "continue_modernbert": 576,  # BioClinical ModernBERT
}


def fairseq_hydra_job(config_dir: str, recipes: tuple[str, ...]) -> list[str]:
    """The composition of `bio-roberta pretrain` / `distill`, stopped at the job config."""
    chosen = [f"+recipe=[{','.join(recipes)}]"] if recipes else []
    return [
        sys.executable,
        "-m",
        "user_dir.distributed_launch",
        "fairseq-hydra-train",
        "--config-dir",
        str(CONFIGS / config_dir),
        "--config-name",
        "base",
        *chosen,
        "task.data=data-bin",
        f"common.user_dir={USER_DIR}",
        "--cfg",
        "job",
    ]


def sweep_job(config_dir: str, recipes: tuple[str, ...]) -> list[str]:
    """The fine-tuning sweep's job config (bio_roberta/configs/finetune/sweep.yaml, in the
    package)."""
    return [
        sys.executable,
        "-m",
        "bio_roberta.finetuning.sweep",
        "task_name=ncbi-disease",
        "pretrained=model.pt",
        "data_root=finetune-bin",
        "results_dir=results",
        "--cfg",
        "job",
    ]


FAIRSEQ_TRAINING = ("pretrain", "distill")  # config dirs of fairseq-hydra-train (base.yaml)
COMPOSE = {
    **{config_dir: fairseq_hydra_job for config_dir in FAIRSEQ_TRAINING},
    "finetune": sweep_job,
}

# The paper's recipe (docs/recipe.md), as configs/pretrain/base.yaml holds it.
PRETRAIN = {
    "model._name": "roberta_base",
    "model.max_positions": 512,
    "model.dropout": 0.1,
    "model.attention_dropout": 0.1,
    "task._name": "corpora_masked_lm",
    "task.tokens_per_sample": 512,
    "task.mask_prob": 0.15,
    "task.leave_unmasked_prob": 0.1,
    "task.random_token_prob": 0.1,
    "criterion": "masked_lm_positions",
    "optimizer._name": "adam",
    "optimizer.adam_betas": "(0.9,0.98)",
    "optimizer.adam_eps": 1e-6,
    "optimizer.weight_decay": 0.01,
    "lr_scheduler._name": "warmup_ratio_linear_decay",
    "lr_scheduler.warmup_ratio": 0.05,  # then to 0, linearly: the schedule's own defaults
    "optimization.lr": [6e-4],
    "optimization.max_update": 500_000,
    "dataset.batch_size": 32,
    "optimization.update_freq": [32],
    "common.fp16": True,
}
# What the pretraining recipes change, and nothing else. A recipe that starts from another model's
# weights marks checkpoint.finetune_from_model WEIGHTS_REQUIRED, which the plugin refuses on a first
# launch ('???' does not survive the merge onto fairseq's schema: OmegaConf keeps its None).
FROM_WEIGHTS = {"checkpoint.finetune_from_model": WEIGHTS_REQUIRED}
TRAIN_LONGER = {
    **FROM_WEIGHTS,
    "checkpoint.save_dir": "checkpoints/train_longer",
    "optimization.lr": [5e-4],
    "optimization.max_update": 50_000,
}
TINY = {
    "common.fp16": False,
    "common.cpu": True,
    "common.log_interval": 1,
    "common.log_format": "simple",
    "checkpoint.save_interval_updates": 0,
    "checkpoint.keep_interval_updates": -1,
    "task.tokens_per_sample": 32,
    "dataset.batch_size": 8,
    "dataset.num_workers": 0,
    "dataset.validate_interval_updates": 0,
    "optimization.lr": [1e-3],
    "optimization.max_update": 20,
    "optimization.update_freq": [1],
    "model._name": "roberta_tiny",
    "model.max_positions": 32,
}
# ModernBERT (Warner et al. 2024; configs/pretrain/recipe/modernbert.yaml cites each value's source)
MODERNBERT = {
    "common.fp16": False,
    "common.bf16": True,
    "task.tokens_per_sample": 1024,
    "task.mask_prob": 0.3,
    "optimizer.weight_decay": 0.0125,  # 1e-5 fully decoupled at the peak lr 8e-4
    "lr_scheduler._name": "warmup_stable_decay",
    "lr_scheduler.warmup_ratio": 0.001746,  # 3B tokens = 636 of 364,309 updates
    "lr_scheduler.decay_ratio": 0.0,
    "lr_scheduler.decay_shape": "linear",
    "lr_scheduler.end_lr_ratio": 0.0,
    "optimization.lr": [8e-4],
    "optimization.max_update": 364_309,
    "optimization.update_freq": [6],
    "dataset.batch_size": 96,
    "model._name": "modernbert",
    "model.max_positions": 1024,
    "model.global_rope_theta": 10_000.0,
    "model.local_rope_theta": 10_000.0,
}
# 8,192 tokens at 576 sequences, lr 3e-4 held then decayed by 1-sqrt to 0.001 of it, from weights
MODERNBERT_8192 = {
    **MODERNBERT,
    **FROM_WEIGHTS,
    "task.tokens_per_sample": 8192,
    "optimizer.weight_decay": 0.033333,  # 1e-5 fully decoupled at lr 3e-4
    "lr_scheduler.warmup_ratio": 0.01,
    "lr_scheduler.decay_shape": "one_minus_sqrt",
    "lr_scheduler.end_lr_ratio": 0.001,
    "optimization.lr": [3e-4],
    "dataset.batch_size": 12,
    "model.max_positions": 8192,
    "model.global_rope_theta": 160_000.0,
}
# the tiny recipe with modernbert_tiny, in fp32 also after a ModernBERT recipe (bf16 there)
MODERNBERT_TINY = {**TINY, "common.bf16": False, "model._name": "modernbert_tiny"}
# Distillation (paper §7): pretraining with train_longer's schedule, the teacher and the loss.
DISTILL_FROM_PRETRAIN = {
    **TRAIN_LONGER,
    "checkpoint.save_dir": "checkpoints/distill",
    "task._name": "distillation",
    "task.teacher_path": "???",
    "task.teacher_dict": "",
    "task.student_layers": "",
    "criterion": None,  # the name alone becomes a node with the loss weights
    "criterion._name": "distillation",
    "criterion.alpha_mlm": 5.0,
    "criterion.alpha_kl": 2.0,
    "criterion.alpha_cos": 0.0,
    "criterion.temperature": 2.0,
    # the per-layer terms (TinyBERT's, MiniLM's), off
    "criterion.alpha_hidden": 0.0,
    "criterion.hidden_distance": "mse",
    "criterion.hidden_layer_map": "",
    "criterion.alpha_attention": 0.0,
    "criterion.attention_relations": "qq,kk,vv",
    "criterion.relation_heads": 0,
    "criterion.relation_layers": "",
}
# Fine-tuning (paper §5.2 and RoBERTa's fine-tuning recipe; the task's own settings are registry
# rows)
FINETUNE = {
    "seed": 10,
    "fp16": False,
    "arch": None,
    "optimization.optimizer": "fused_adam",
    "optimization.adam_betas": "(0.9,0.98)",
    "optimization.adam_eps": 1e-6,
    "optimization.clip_norm": 0.0,
    "optimization.lr_scheduler": "polynomial_decay",
}
BASE_VALUES = {
    "pretrain": PRETRAIN,
    "distill": {**PRETRAIN, **DISTILL_FROM_PRETRAIN},
    "finetune": FINETUNE,
}
BASE_VALUES["distill"].pop("criterion")
RECIPE_CHANGES = {
    ("pretrain", "large"): {
        "model._name": "roberta_large",
        "optimization.lr": [4e-4],
        "dataset.batch_size": 8,
        "optimization.update_freq": [128],
    },
    ("pretrain", "continue_roberta"): FROM_WEIGHTS,
    ("pretrain", "train_longer"): TRAIN_LONGER,
    ("pretrain", "tiny"): TINY,
    ("pretrain", "modernbert"): MODERNBERT,
    # context extension (250B tokens) and decay (the last 50B) in one run of 300B tokens
    ("pretrain", "modernbert_long"): {
        **MODERNBERT_8192,
        "lr_scheduler.decay_ratio": 0.166667,
        "optimization.max_update": 63_578,
    },
    # BioClinical ModernBERT's 168.7B tokens, the last 8.2B of them decaying
    ("pretrain", "continue_modernbert"): {
        **MODERNBERT_8192,
        "lr_scheduler.decay_ratio": 0.0489,
        "optimization.max_update": 35_752,
    },
    ("pretrain", "modernbert_tiny"): MODERNBERT_TINY,
    # the speed levers that keep the arithmetic (docs/speed.md "Speed")
    ("pretrain", "speed"): {
        "common.fp16": False,
        "common.bf16": True,
        "criterion": None,  # the name alone becomes a node with the chunk size
        "criterion._name": "masked_lm_positions",
        "criterion.lm_loss_chunk_rows": 4096,
        "optimizer._name": "fused_adam",
    },
    ("distill", "align"): {"criterion.alpha_cos": 1.0},
    # the student built from the teacher's layers, no student checkpoint
    ("distill", "student6"): {
        "task.student_layers": "every_other",
        "checkpoint.finetune_from_model": None,
    },
    ("distill", "student4"): {
        "task.student_layers": "0,4,7,11",
        "checkpoint.finetune_from_model": None,
    },
    ("distill", "hidden"): {"criterion.alpha_hidden": 1.0},
    ("distill", "minilm"): {"criterion.alpha_attention": 1.0},
    # the one tiny recipe, with a student narrower than the 64-wide tiny teacher, and 6 updates
    ("distill", "tiny"): {
        **TINY,
        "optimization.max_update": 6,
        "model.encoder_embed_dim": 32,
        "model.encoder_ffn_embed_dim": 64,
    },
}
# Recipes that are chosen together (+recipe=[a,b]) in tests and the demo.
COMBINED = [
    ("pretrain", ("tiny", "continue_roberta")),
    ("pretrain", ("modernbert", "modernbert_tiny")),
    ("pretrain", ("continue_modernbert", "modernbert_tiny")),
    ("distill", ("tiny", "align")),
    ("distill", ("tiny", "student6", "hidden", "minilm")),
]
CASES = (
    [(config_dir, ()) for config_dir in COMPOSE]
    + [(config_dir, (recipe,)) for config_dir, recipe in RECIPE_CHANGES]
    + COMBINED
)
FAIRSEQ_CASES = [case for case in CASES if case[0] in FAIRSEQ_TRAINING]


def case_id(case) -> str:
    return "+".join([case[0], *case[1]])


def flat(node, prefix="") -> dict:
    """{"a.b": value} for every leaf; a list is a leaf."""
    if not isinstance(node, dict):
        return {prefix: node}
    leaves = {}
    for key, value in node.items():
        leaves.update(flat(value, f"{prefix}{key}."))
    return {key.rstrip("."): value for key, value in leaves.items()}


def changes(before: dict, after: dict) -> dict:
    """What after sets differently from before; a key after drops maps to None."""
    changed = {key: value for key, value in after.items() if before.get(key, object()) != value}
    return changed | {key: None for key in before.keys() - after.keys()}


@pytest.fixture(scope="module")
def composed() -> dict:
    """Every case's job config, flattened; compositions run side by side (each starts fairseq)."""

    def compose(case):
        config_dir, recipes = case
        done = subprocess.run(
            COMPOSE[config_dir](config_dir, recipes), capture_output=True, text=True, cwd=REPO_ROOT
        )
        assert done.returncode == 0, f"{case} does not compose:\n{done.stderr[-3000:]}"
        return flat(yaml.safe_load(done.stdout))

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(CASES, pool.map(compose, CASES)))


def test_every_recipe_is_checked():
    recipes = CONFIGS.glob("*/recipe/*.yaml")
    assert {(recipe.parent.parent.name, recipe.stem) for recipe in recipes} == set(RECIPE_CHANGES)
    assert {path.parent.name for path in CONFIGS.glob("*/base.yaml")} == set(FAIRSEQ_TRAINING)


@pytest.mark.parametrize("config_dir", list(COMPOSE))
def test_base_config_holds_the_paper_recipe(composed, config_dir):
    job = composed[(config_dir, ())]
    assert {key: job.get(key) for key in BASE_VALUES[config_dir]} == BASE_VALUES[config_dir]


def test_distillation_is_pretraining_with_the_teacher(composed):
    assert changes(composed[("pretrain", ())], composed[("distill", ())]) == DISTILL_FROM_PRETRAIN


def expected_changes(base: dict, config_dir: str, recipes: tuple[str, ...]) -> dict:
    """What RECIPE_CHANGES says the recipes change, each over the one before; a value the base
    config already has is no change."""
    expected = {}
    for recipe in recipes:
        expected |= RECIPE_CHANGES[(config_dir, recipe)]
    return {key: value for key, value in expected.items() if base.get(key, object()) != value}


@pytest.mark.parametrize("config_dir,recipe", list(RECIPE_CHANGES))
def test_recipe_changes_exactly_what_it_says(composed, config_dir, recipe):
    base = composed[(config_dir, ())]
    assert changes(base, composed[(config_dir, (recipe,))]) == expected_changes(
        base, config_dir, (recipe,)
    )


@pytest.mark.parametrize("config_dir,recipes", COMBINED)
def test_recipes_combine(composed, config_dir, recipes):
    base = composed[(config_dir, ())]
    assert changes(base, composed[(config_dir, recipes)]) == expected_changes(
        base, config_dir, recipes
    )


@pytest.mark.parametrize("case", FAIRSEQ_CASES, ids=case_id)
def test_gpu_configs_update_on_their_paper_s_sequences_per_node(composed, case):
    """`bio-roberta pretrain` recomputes update_freq for the GPUs at hand from the configured
    batch on one node (bio_roberta/pretraining/batch_plan.py: configured_batch), which is the
    paper's: 8,192 sequences, or ModernBERT's own. The CPU (tiny) recipes keep their own."""
    job = composed[case]
    if not job.get("common.cpu"):
        per_node = job["dataset.batch_size"] * job["optimization.update_freq"][0] * GPUS_PER_NODE
        recipe = case[1][0] if case[1] else None
        assert per_node == MODERNBERT_SEQUENCES_PER_UPDATE.get(recipe, SEQUENCES_PER_UPDATE)


def test_the_linear_decay_s_end_and_shape_are_the_schedule_s_defaults():
    """base.yaml leaves them to the schedule (so that a recipe can name another): to 0, linearly,
    as the paper's."""
    from user_dir.lr_schedulers.warmup_ratio_linear_decay import WarmupRatioLinearDecayConfig

    defaults = WarmupRatioLinearDecayConfig()
    assert (defaults.end_learning_rate, defaults.power) == (0.0, 1.0)


def section(job: dict, name: str) -> dict:
    return {key[len(name) + 1 :]: value for key, value in job.items() if key.startswith(name + ".")}


def model_arguments(arch: str) -> set:
    parser = ArgumentParser()
    models.ARCH_MODEL_REGISTRY[arch].add_args(parser)
    return {action.dest for action in parser._actions} | {"_name"}


@pytest.mark.parametrize("case", FAIRSEQ_CASES, ids=case_id)
def test_components_are_registered_and_take_their_keys(composed, case):
    """A misspelt key composes (fairseq's task, criterion and model nodes take anything) and
    fails only when training starts: here it fails at once."""
    job = composed[case]
    registries = {
        "task": tasks.TASK_DATACLASS_REGISTRY,
        "criterion": criterions.CRITERION_DATACLASS_REGISTRY,
        "optimizer": optim.OPTIMIZER_DATACLASS_REGISTRY,
        "lr_scheduler": lr_scheduler.LR_SCHEDULER_DATACLASS_REGISTRY,
    }
    for name, registry in registries.items():
        keys = section(job, name) or {"_name": job[name]}
        assert keys["_name"] in registry, f"{name} {keys['_name']} is not registered"
        assert set(keys) <= {field.name for field in fields(registry[keys["_name"]])}, name
    model = section(job, "model")
    assert set(model) <= model_arguments(model["_name"])


def test_sweep_overrides_name_every_registry_hyperparameter():
    """The sweep's typed hparams overrides stay field for field the registry's Hyperparameters,
    so each registry value can be overridden and nothing else is accepted."""
    from bio_roberta.finetuning.sweep_config import HparamsOverrides
    from bio_roberta.tasks.spec import Hyperparameters

    assert [f.name for f in fields(HparamsOverrides)] == [f.name for f in fields(Hyperparameters)]


def test_sweep_config_refuses_an_unknown_or_mistyped_key():
    """The sweep job's config is typed (bio_roberta/finetuning/sweep_config.py): a misspelt override
    or a value of the wrong type stops the job before it runs, naming the key."""
    from hydra.errors import ConfigCompositionException

    from bio_roberta.finetuning.sweep import compose_config

    required = ["task_name=ncbi-disease", "pretrained=x", "data_root=y", "results_dir=z"]
    for override, key in [("hparams.lrr=1", "lrr"), ("hparams.batch_size=eight", "batch_size")]:
        with pytest.raises(ConfigCompositionException) as error:
            compose_config([*required, override])
        assert key in f"{error.value} {error.value.__cause__}"
