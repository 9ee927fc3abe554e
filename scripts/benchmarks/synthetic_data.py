"""A data-bin of random tokens, written straight to fairseq's mmap format: the benchmarks need no
corpus and no BPE."""

from pathlib import Path

from benchmarks.cpu_shape import SEQ, VOCAB

# our dictionaries' size multiple, <mask> included (binarize, learn-vocab, the RoBERTa import)
PAD_VOCAB_TO = 64


def synthetic_databin(
    root: Path, vocab: int = VOCAB, seq: int = SEQ, train_lines: int = 1500
) -> Path:
    """A vocab-entry dictionary and random token lines written straight to fairseq's mmap format;
    the tokens depend on the seed only, not on the dictionary size beyond the first 47,000
    entries."""
    import torch
    from fairseq.data import Dictionary, indexed_dataset

    root.mkdir(parents=True, exist_ok=True)

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial - 1):  # masked_lm adds <mask>
        dictionary.add_symbol(f"w{i}", n=vocab - i)
    dictionary.save(str(root / "dict.txt"))
    generator = torch.Generator().manual_seed(0)
    for split, lines in (("train", train_lines), ("valid", 8)):
        builder = indexed_dataset.MMapIndexedDatasetBuilder(
            str(root / f"{split}.bin"),
            dtype=indexed_dataset.best_fitting_int_dtype(len(dictionary)),
        )
        for _ in range(lines):
            tokens = torch.randint(
                dictionary.nspecial, min(len(dictionary), VOCAB), (seq - 2,), generator=generator
            )
            builder.add_item(torch.cat([tokens, torch.tensor([dictionary.eos()])]))
        builder.finalize(str(root / f"{split}.idx"))
    return root
