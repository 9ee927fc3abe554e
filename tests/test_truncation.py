"""A sentence pair longer than the model's positions is cut as transformers cuts it
(truncation="longest_first" of its fast tokenizers, which is tokenizers' truncate_encodings):
checked against the tokenizers library on every small pair of lengths, and against transformers'
tokenizer on the real BIOSSES pairs (issue 43: at 32 positions the old rule gave an odd budget's
extra token to the second text, transformers to the longer one)."""

from __future__ import annotations

import pytest

from bio_roberta.tasks.truncation import truncate_longest_first
from conftest import shared_data_path

tokenizers = pytest.importorskip("tokenizers")

WORDS = [f"w{i}" for i in range(30)]


def word_level_pair_tokenizer(max_length: int):
    """A tokenizers Tokenizer of one id per word, BERT's pair template, and longest_first
    truncation to max_length positions (the specials included, as transformers sets it)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {word: i for i, word in enumerate(["[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 1), ("[SEP]", 2)],
    )
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    return tokenizer


def test_every_small_pair_is_cut_as_the_tokenizers_library_cuts_it():
    """All pairs of 0-14 and 0-14 tokens at 4-24 positions, single texts too."""
    checked = 0
    for max_length in range(4, 25):
        tokenizer = word_level_pair_tokenizer(max_length)
        budget = max_length - 3  # [CLS] a [SEP] b [SEP]
        for n in range(15):
            for m in range(15):
                first, second = WORDS[:n], WORDS[15 : 15 + m]
                expected = tokenizer.encode(" ".join(first), " ".join(second)).tokens
                kept_first, kept_second = truncate_longest_first(first, second, budget, "x")
                assert expected == ["[CLS]", *kept_first, "[SEP]", *kept_second, "[SEP]"], (
                    n,
                    m,
                    max_length,
                )
                checked += 1
            single = truncate_longest_first(WORDS[:n], [], max_length - 2, "x")
            assert single == (WORDS[: min(n, max_length - 2)], [])
    assert checked == 21 * 15 * 15


@pytest.mark.real_data
def test_biosses_pairs_at_32_positions_are_cut_as_transformers_cuts_them(tmp_path):
    """The 100 BIOSSES pairs with a BERT tokenizer (WordPiece learned on the sample text): the
    tokens each text keeps at 32 positions are transformers' tokenizer's, for every pair."""
    import transformers

    from bio_roberta.readers import read_task
    from bio_roberta.tasks.registry import get_task
    from test_import_hf import wordpiece_tokenizer

    spec = get_task("biosses")
    data = read_task(spec, shared_data_path("sts", "BIOSSES"))
    pairs = [(e.text, e.text_pair) for split in data.splits.values() for e in split.examples]
    assert len(pairs) == 100
    tokenizer = wordpiece_tokenizer(tmp_path, lowercase=True)
    assert isinstance(tokenizer, transformers.PreTrainedTokenizerFast)  # tokenizers' truncation
    odd_and_first_longer = 0
    for first_text, second_text in pairs:
        first, second = (
            tokenizer(text, add_special_tokens=False)["input_ids"]
            for text in (first_text, second_text)
        )
        expected = tokenizer(first_text, second_text, truncation="longest_first", max_length=32)
        kept_first, kept_second = truncate_longest_first(first, second, 32 - 3, "biosses")
        cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        assert expected["input_ids"] == [cls, *kept_first, sep, *kept_second, sep]
        odd_and_first_longer += min(len(first), len(second)) > 14 and len(first) > len(second)
    # the pairs the old rule cut otherwise (both cut, the first longer): the test can fail
    assert odd_and_first_longer > 20
