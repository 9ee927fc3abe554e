"""--group-by-length (user_dir/tasks/_finetune_bin.py): a fine-tuning task's batches drawn as
transformers' group_by_length draws them (the shuffled examples cut into megabatches of 50
batches, each sorted longest first), through fairseq-train's own option parsing, dataset loading
and batching, for a finetune-bin task (sequence_labeling) and sentence_classification; without
--batch-size, a clear error."""

import random

import numpy as np
import pytest
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from conftest import REPO_ROOT
from finetune_data import build_classification, build_ner, write_indexed

BATCH = 2
MEGABATCH = 50 * BATCH


def loaded(data, task, *flags):
    """(the train dataset, the batches fairseq-train would cut from it) of
    `fairseq-train DATA --task TASK FLAGS`."""
    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [str(data), "--user-dir", str(REPO_ROOT / "user_dir"), "--task", task, "--cpu",
         "--seed", "1", "--arch", "roberta", *flags],
    )  # fmt: skip
    cfg = convert_namespace_to_omegaconf(args)
    fairseq_task = tasks.setup_task(cfg.task)
    fairseq_task.load_dataset("train")
    dataset = fairseq_task.dataset("train")
    batches = fairseq_task.get_batch_iterator(
        dataset, max_sentences=cfg.dataset.batch_size, max_tokens=cfg.dataset.max_tokens, seed=1
    ).frozen_batches
    return dataset, [list(batch) for batch in batches]


def sizes_of(dataset):
    return np.asarray(dataset.sizes[0] if isinstance(dataset.sizes, list) else dataset.sizes)


def assert_grouped_like_the_shuffle(data, task, *flags):
    """Same examples per megabatch as the shuffled order, each megabatch longest first, and
    fairseq's batches cut from that order; returns the padded tokens of both ways' batches and
    the real tokens."""
    plain, plain_batches = loaded(data, task, "--batch-size", str(BATCH), *flags)
    grouped, batches = loaded(data, task, "--batch-size", str(BATCH), "--group-by-length", *flags)
    shuffled, order = plain.ordered_indices(), grouped.ordered_indices()
    sizes = sizes_of(grouped)
    assert len(order) == len(shuffled) > BATCH
    for start in range(0, len(order), MEGABATCH):
        megabatch = order[start : start + MEGABATCH]
        assert set(megabatch) == set(shuffled[start : start + MEGABATCH])
        assert (np.diff(sizes[megabatch]) <= 0).all()
    assert [index for batch in batches for index in batch] == list(order)
    assert all(len(batch) == BATCH for batch in batches[:-1])

    def padded(batch_list):
        return sum(len(batch) * sizes[batch].max() for batch in batch_list)

    return padded(plain_batches), padded(batches), sizes.sum()


def test_word_tagging_batches_come_from_megabatches_sorted_by_length(
    tmp_path, tiny_roberta_checkpoint
):
    data = build_ner(tmp_path / "ner", tiny_roberta_checkpoint.parent / "dict.txt")
    # 250 training sentences of 3 to 40 tokens: megabatches of 100, 100 and 50
    vocab = Dictionary.load(str(data / "input0" / "dict.txt"))
    labels = Dictionary.load(str(data / "label" / "dict.txt"))
    rng = random.Random(3)
    lengths = [rng.randint(3, 40) for _ in range(250)]
    write_indexed(
        data / "input0" / "train",
        [
            [rng.randrange(vocab.nspecial, len(vocab)) for _ in range(n)] + [vocab.eos()]
            for n in lengths
        ],
        len(vocab),
    )
    write_indexed(
        data / "label" / "train",
        [[labels.index("O")] * n + [labels.eos()] for n in lengths],
        len(labels),
    )
    plain, grouped, real = assert_grouped_like_the_shuffle(data, "sequence_labeling")
    assert grouped < 1.05 * real < plain  # almost no padding


def test_sentence_classification_batches_are_grouped_alike(tmp_path, tiny_roberta_checkpoint):
    data = tmp_path / "gad"
    build_classification(data, tiny_roberta_checkpoint.parent / "dict.txt", "gad")
    plain, grouped, real = assert_grouped_like_the_shuffle(
        data,
        "sentence_classification",
        "--criterion",
        "single_label_classification",
        "--num-classes",
        "2",
        "--init-token",
        "0",
    )
    assert grouped < 1.05 * real < plain


def test_without_a_batch_size_the_option_says_what_it_needs(tmp_path, tiny_roberta_checkpoint):
    data = build_ner(tmp_path / "ner", tiny_roberta_checkpoint.parent / "dict.txt")
    with pytest.raises(ValueError, match=r"--group-by-length cuts megabatches of 50 batches: "
                       r"give --batch-size"):  # fmt: skip
        loaded(data, "sequence_labeling", "--max-tokens", "64", "--group-by-length")
