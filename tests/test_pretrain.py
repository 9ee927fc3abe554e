"""Pretraining recipe: the tiny config of the RECIPE runs through fairseq-hydra-train and the same
components through fairseq-train; warmup follows max_update; several corpora mix in one epoch at
the configured shares; whole-word masking works with our own gpt2 BPE files."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import user_dir  # noqa: F401
from conftest import REPO_ROOT, USER_DIR
from tiny_training import fairseq_preprocess, train_masked_lm, write_tiny_corpus
from user_dir.tasks.corpora_masked_lm import CorporaMaskedLMConfig, CorporaMaskedLMTask

BIN = Path(sys.executable).parent


def learning_rates(log: str) -> list:
    return [float(x) for x in re.findall(r"train_inner\W.*? lr=([\d.e-]+)", log)]


def completed(cmd) -> str:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout + done.stderr


def pretrain_recipe_args(*overrides) -> list:
    """fairseq-hydra-train's arguments: configs/pretrain/base.yaml, the plugin, the overrides."""
    config = ["--config-dir", REPO_ROOT / "configs/pretrain", "--config-name", "base"]
    return [*config, f"common.user_dir={USER_DIR}", *overrides]


@pytest.mark.slow
def test_hydra_recipe_trains_and_warmup_follows_max_update(tiny_databin, tmp_path):
    log = completed(
        [
            BIN / "fairseq-hydra-train",
            *pretrain_recipe_args(
                "+recipe=tiny",
                f"task.data={tiny_databin}",
                f"checkpoint.save_dir={tmp_path}",
                "optimization.max_update=40",
            ),
        ]
    )
    lrs = learning_rates(log)
    assert len(lrs) == 40
    # 5% of 40 updates = 2 warmup updates to the peak 1e-3, then linear decay to 0 at update 40
    assert lrs[:3] == pytest.approx([5e-4, 1e-3, 1e-3 * 37 / 38], rel=1e-3)
    assert lrs[-1] == 0
    assert (
        "mask_prob': 0.15" in log
        and "leave_unmasked_prob': 0.1" in log
        and "random_token_prob': 0.1" in log
    )
    assert (tmp_path / "checkpoint_last.pt").exists() and (
        tmp_path / ".hydra" / "config.yaml"
    ).exists()


def recipe_adam_flags() -> list[str]:
    """fairseq-train's flags for the Adam settings of configs/pretrain/base.yaml (the recipe's
    values, which tests/test_configs.py checks against the paper's)."""
    from omegaconf import OmegaConf

    adam = OmegaConf.load(REPO_ROOT / "configs/pretrain/base.yaml").optimizer
    return [
        "--adam-betas",
        str(adam.adam_betas),
        "--adam-eps",
        str(adam.adam_eps),
        "--weight-decay",
        str(adam.weight_decay),
    ]


@pytest.mark.slow
def test_fairseq_train_command_line_runs_the_same_components(tiny_databin, tmp_path):
    log = train_masked_lm(
        tiny_databin,
        tmp_path,
        8,
        *recipe_adam_flags(),
        "--lr-scheduler",
        "warmup_ratio_linear_decay",
        "--warmup-ratio",
        "0.25",
        "--log-interval",
        "1",
        "--disable-validation",
        task="corpora_masked_lm",
    )
    assert learning_rates(log) == pytest.approx(
        [5e-4, 1e-3, 1e-3 * 5 / 6, 1e-3 * 4 / 6, 1e-3 * 3 / 6, 1e-3 * 2 / 6, 1e-3 / 6, 0], rel=1e-3
    )


@pytest.fixture(scope="module")
def second_corpus(tiny_databin, tmp_path_factory):
    """Another corpus binarised with the first one's dictionary (as PM and M3 share a
    vocabulary)."""
    root = tmp_path_factory.mktemp("m3")
    text = write_tiny_corpus(root / "text", seed=7, lines={"train": 100, "valid": 8})
    return fairseq_preprocess(text, root / "bin", srcdict=tiny_databin / "dict.txt")


def corpora_task(data, **options):
    return CorporaMaskedLMTask.setup_task(
        CorporaMaskedLMConfig(data=data, tokens_per_sample=32, seed=1, **options)
    )


def test_corpora_are_concatenated_in_every_epoch(tiny_databin, second_corpus):
    first, both = corpora_task(str(tiny_databin)), corpora_task(f"{tiny_databin}:{second_corpus}")
    sizes = [
        len(first._load_dataset_split("train", 1, False)),
        len(corpora_task(str(second_corpus))._load_dataset_split("train", 1, False)),
    ]
    for epoch in (1, 2):  # fairseq's masked_lm would give only one corpus per epoch
        assert len(both._load_dataset_split("train", epoch, False)) == sum(sizes)


def test_sampling_ratios_set_each_corpus_share(tiny_databin, second_corpus):
    task = corpora_task(f"{tiny_databin}:{second_corpus}", corpus_sampling_ratios="1,3")
    first_size = len(corpora_task(str(tiny_databin))._load_dataset_split("train", 1, False))
    resampled = task._load_dataset_split("train", 1, False)
    share = (resampled._cur_indices.array >= first_size).mean()  # the draw of this epoch
    assert share == pytest.approx(0.75, abs=0.06)
    with pytest.raises(ValueError, match="one non-negative share per data dir"):
        corpora_task(
            f"{tiny_databin}:{second_corpus}", corpus_sampling_ratios="1"
        )._load_dataset_split("train", 1, False)


@pytest.fixture(scope="module")
def bpe_databin(tmp_path_factory):
    """Text encoded with a small byte-level BPE saved as gpt2 encoder.json + vocab.bpe, then
    binarised."""
    from fairseq.data.encoders.gpt2_bpe import GPT2BPE, GPT2BPEConfig
    from tokenizers import ByteLevelBPETokenizer

    root = tmp_path_factory.mktemp("bpe")
    text = write_tiny_corpus(root / "text", seed=3, lines={"train": 120, "valid": 16})
    learner = ByteLevelBPETokenizer()
    learner.train([str(text / "train.txt")], vocab_size=300, min_frequency=2, show_progress=False)
    vocab = root / "vocab"
    vocab.mkdir()
    learner.save_model(str(vocab))
    (vocab / "vocab.json").rename(vocab / "encoder.json")
    (vocab / "merges.txt").rename(vocab / "vocab.bpe")
    bpe = GPT2BPE(
        GPT2BPEConfig(
            gpt2_encoder_json=str(vocab / "encoder.json"), gpt2_vocab_bpe=str(vocab / "vocab.bpe")
        )
    )
    encoded = root / "encoded"
    encoded.mkdir()
    for split in ("train", "valid"):
        lines = (text / f"{split}.txt").read_text().splitlines()
        (encoded / f"{split}.txt").write_text(
            "\n".join(bpe.encode(" " + line) for line in lines) + "\n"
        )
    return fairseq_preprocess(encoded, root / "bin"), vocab, bpe


def test_whole_word_masking_masks_every_piece_of_a_word(bpe_databin):
    databin, vocab, bpe = bpe_databin
    task = corpora_task(str(databin), mask_whole_words=True, bpe_dir=str(vocab), mask_prob=0.3)
    task.load_dataset("valid")
    dictionary, dataset = task.source_dictionary, task.dataset("valid")
    starts = [
        i < dictionary.nspecial
        or not dictionary[i].isdigit()
        or bpe.is_beginning_of_word(dictionary[i])
        for i in range(len(dictionary))
    ]  # specials, <mask> and padding words stand alone
    split_words = masked_words = 0
    for index in range(len(dataset)):
        item = dataset[index]
        tokens, target = item["net_input.src_tokens"], item["target"]
        original = torch.where(target.ne(dictionary.pad()), target, tokens)
        words, current = [], []
        for position, token in enumerate(original.tolist()):
            if starts[token] and current:
                words.append(current)
                current = []
            current.append(position)
        words.append(current)
        for word in words:
            masked = [target[p].item() != dictionary.pad() for p in word]
            assert all(masked) or not any(masked), (index, word, masked)
            split_words += len(word) > 1
            masked_words += all(masked) and len(word) > 1
    assert split_words > 20 and masked_words > 3  # the check had multi-piece words to bite on


def test_whole_word_masking_without_bpe_files_says_what_is_missing(tiny_databin):
    task = corpora_task(str(tiny_databin), mask_whole_words=True)
    with pytest.raises(ValueError, match="task.bpe_dir"):
        task.load_dataset("valid")


@pytest.mark.slow
def test_continue_roberta_recipe_starts_from_the_checkpoint_weights_with_fresh_state(
    tiny_databin, tiny_roberta_checkpoint, tmp_path
):
    """+recipe=continue_roberta: weights from the general-domain checkpoint; optimizer, schedule,
    meters and data position start afresh (update 1, warmup again). A first launch without the
    weights is refused (it would start from random ones); a restart resumes without them."""
    launch = [
        sys.executable,
        "-m",
        "user_dir.distributed_launch",  # as scripts/pretrain.sh launches
        "fairseq-hydra-train",
        *pretrain_recipe_args(
            "+recipe=[tiny,continue_roberta]",
            f"task.data={tiny_databin}",
            f"checkpoint.save_dir={tmp_path}",
            "optimization.lr=[0.0]",
        ),
    ]
    refused = subprocess.run(
        [str(c) for c in launch + ["optimization.max_update=2"]],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert refused.returncode != 0
    assert "give checkpoint.finetune_from_model=<checkpoint.pt>" in refused.stderr
    assert "num_updates" not in refused.stdout + refused.stderr
    assert not (tmp_path / "checkpoint_last.pt").exists()

    log = completed(
        launch
        + ["optimization.max_update=2", f"checkpoint.finetune_from_model={tiny_roberta_checkpoint}"]
    )
    assert (
        f"loading pretrained model from {tiny_roberta_checkpoint}: optimizer, lr scheduler, "
        "meters, dataloader will be reset" in log
    )
    assert re.findall(r"num_updates=(\d+)", log)[:2] == ["1", "2"]
    # with lr 0 the continued model still holds the general checkpoint's weights exactly
    before = torch.load(tiny_roberta_checkpoint, map_location="cpu")["model"]
    after = torch.load(tmp_path / "checkpoint_last.pt", map_location="cpu")["model"]
    assert before.keys() == after.keys()
    assert all(torch.equal(before[name], after[name]) for name in before)

    resumed = completed(launch + ["optimization.max_update=3"])
    assert "loading pretrained model" not in resumed
    assert re.findall(r"num_updates=(\d+)", resumed)[:1] == ["3"]


@pytest.mark.slow
def test_bf16_trains_from_the_command_line_without_a_tpu(tiny_databin, tmp_path):
    """fairseq turns --bf16 into --tpu; with the plugin it trains in bf16 on this CPU (as on a
    GPU)."""
    log = train_masked_lm(
        tiny_databin,
        tmp_path,
        4,
        "--bf16",
        "--log-interval",
        "1",
        "--disable-validation",
        task="corpora_masked_lm",
    )
    losses = [float(x) for x in re.findall(r"train_inner\W.*? loss=([\d.]+)", log)]
    assert len(losses) == 4 and all(0 < loss < 20 for loss in losses), log[-2000:]
    assert "training in bf16 on CPU, not on a TPU" in log
    assert (
        "'bf16': True" in log and "'tpu': False" in log
    )  # the configuration fairseq's trainer received


def test_fp16_and_bf16_together_are_refused_before_training():
    from omegaconf import OmegaConf

    from user_dir.precision import configure_precision

    cfg = OmegaConf.create({"common": {"fp16": True, "bf16": True, "tpu": False, "cpu": False}})
    with pytest.raises(ValueError, match="common.fp16=false"):
        configure_precision(cfg)


def test_bf16_command_line_projects_only_the_masked_positions(tiny_databin):
    """fairseq's CLI copies --bf16's implied --tpu into every config group, and the masked_lm
    criterion "on TPU" projects all positions onto the vocabulary: precision clears them all."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from user_dir.precision import configure_precision

    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [
            str(tiny_databin),
            "--user-dir",
            str(USER_DIR),
            "--task",
            "corpora_masked_lm",
            "--criterion",
            "masked_lm",
            "--arch",
            "roberta_tiny",
            "--cpu",
            "--bf16",
            "--tokens-per-sample",
            "32",
            "--optimizer",
            "adam",
        ],
    )
    cfg = convert_namespace_to_omegaconf(args)
    assert cfg.criterion.tpu and cfg.optimizer.tpu  # what fairseq's command line makes of --bf16
    configure_precision(cfg)
    assert [name for name in cfg if isinstance(cfg[name], dict) and cfg[name].get("tpu")] == []
    task = tasks.setup_task(cfg.task)
    task.load_dataset("valid")
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    projected_rows = []
    model.encoder.lm_head.dense.register_forward_hook(
        lambda module, inputs, output: projected_rows.append(len(inputs[0]))
    )
    sample = next(
        task.get_batch_iterator(task.dataset("valid"), max_sentences=8).next_epoch_itr(
            shuffle=False
        )
    )
    _, sample_size, _ = criterion(model, sample)
    assert projected_rows == [int(sample_size)] and 0 < sample_size < 0.3 * sample["target"].numel()


@pytest.mark.slow
def test_a_padded_roberta_keeps_its_logits_and_continues_pretraining(
    tiny_databin, tiny_roberta_checkpoint, tmp_path
):
    """The checkpoint's vocabulary rows padded with its dict.txt (learn-vocab --checkpoint): every
    logit of an existing entry is the unpadded model's, in stock fairseq; +recipe=continue_roberta
    starts from it on data binarized with the padded dict.txt."""
    import shutil

    from fairseq import checkpoint_utils
    from fairseq.tasks.masked_lm import MaskedLMConfig, MaskedLMTask

    from preprocess.roberta_vocab import pad_checkpoint_vocabulary
    from preprocess.vocab_dir import write_padded_dict

    padded_data = tmp_path / "data"
    shutil.copytree(tiny_databin, padded_data)
    added = write_padded_dict(tiny_databin / "dict.txt", padded_data / "dict.txt")
    padded_checkpoint = padded_data / "model.pt"  # beside its dict.txt, as learn-vocab writes it
    assert (
        pad_checkpoint_vocabulary(
            tiny_roberta_checkpoint, tiny_databin / "dict.txt", padded_checkpoint
        )
        == added
        > 0
    )

    def stock_model(checkpoint, data):
        task = MaskedLMTask.setup_task(MaskedLMConfig(data=str(data)))
        (model,), _ = checkpoint_utils.load_model_ensemble([str(checkpoint)], task=task)
        return model.eval(), task.source_dictionary

    model, dictionary = stock_model(tiny_roberta_checkpoint, tiny_databin)
    padded_model, padded_dictionary = stock_model(padded_checkpoint, padded_data)
    assert (
        len(padded_dictionary) % 64 == 0
        and padded_dictionary.symbols[: len(dictionary) - 1] == dictionary.symbols[:-1]
    )
    tokens = torch.randint(
        4, len(dictionary) - 1, (2, 20), generator=torch.Generator().manual_seed(0)
    )
    tokens[:, 0], tokens[:, 5] = 0, dictionary.index("<mask>")
    padded_tokens = tokens.masked_fill(
        tokens == dictionary.index("<mask>"), padded_dictionary.index("<mask>")
    )
    with torch.no_grad():
        logits, padded_logits = model(tokens)[0], padded_model(padded_tokens)[0]
    assert torch.equal(padded_logits[..., : len(dictionary) - 1], logits[..., :-1])
    assert torch.equal(padded_logits[..., -1], logits[..., -1])  # <mask>, now the last entry

    log = completed(
        [
            BIN / "fairseq-hydra-train",
            *pretrain_recipe_args(
                "+recipe=[tiny,continue_roberta]",
                f"task.data={padded_data}",
                f"checkpoint.finetune_from_model={padded_checkpoint}",
                f"checkpoint.save_dir={tmp_path / 'continued'}",
                "optimization.max_update=2",
                "optimization.lr=[0.0]",
            ),
        ]
    )
    assert re.findall(r"num_updates=(\d+)", log)[:2] == ["1", "2"]
    before = torch.load(padded_checkpoint, map_location="cpu")["model"]
    after = torch.load(tmp_path / "continued" / "checkpoint_last.pt", map_location="cpu")["model"]
    assert all(torch.equal(before[name], after[name]) for name in before)
