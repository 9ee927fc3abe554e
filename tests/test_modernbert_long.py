"""ModernBERT at its own length (user_dir/models/modernbert.py): the sliding layers' blockwise
attention is exactly the band |i - j| <= local_attention // 2 over real keys, forward and
backward, at every block edge, without a T x T mask; the imported model's outputs and gradients
equal transformers' there; and an imported ModernBERT fine-tunes on a document far longer than
512 tokens at 8,192 positions, each example whole and on its own. Time and memory against
transformers: scripts/benchmark_long.py (test_benchmark_long_prints_both_routes_at_each_length)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from bio_roberta.cli import main as cli_main
from user_dir.models import _modernbert_attention as modernbert_attention
from user_dir.models._modernbert_attention import FullAttention, SlidingWindowAttention

transformers = pytest.importorskip("transformers")

from test_import_hf import (  # noqa: E402
    NER_SAMPLE,
    TOLERANCE,
    converted_rows,
    fairseq_ids,
    load_fairseq,
    modernbert_inputs,
    save_and_import,
)

REPO = Path(__file__).resolve().parent.parent


def padding(lengths: list[int], length: int) -> torch.Tensor:
    return torch.arange(length)[None, :] >= torch.tensor(lengths)[:, None]


def band_attention(q, k, v, padding_mask, half_window, scale):
    """The definition, with the T x T scores and mask the blockwise attention avoids (a query
    also sees itself, which changes no real query's row and leaves a padding query's finite)."""
    positions = torch.arange(q.shape[2])
    distance = positions[:, None] - positions[None, :]
    allowed = (distance.abs() <= half_window) & ~padding_mask[:, None, None, :] | (distance == 0)
    scores = (q @ k.transpose(-1, -2) * scale).masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1) @ v


# (T, half window, real lengths): its block edges
EDGES = {
    "T not a multiple of the block": (37, 4, [37, 30]),
    "window larger than T": (5, 8, [5, 3]),
    "window exactly T": (9, 8, [9, 9]),  # T - 1 == half window: the full route's edge
    "two blocks, the second a token": (9, 4, [9, 6]),
    "padding in the last block": (40, 4, [39, 35]),
    "the last block all padding": (40, 4, [40, 31]),
    "one real token": (26, 3, [26, 1]),
    "window of one token": (11, 0, [11, 8]),
    "ModernBERT's window": (300, 64, [300, 129]),
}


@pytest.mark.parametrize("length, half_window, lengths", EDGES.values(), ids=EDGES)
def test_sliding_window_attention_is_the_band_forward_and_backward(length, half_window, lengths):
    generator = torch.Generator().manual_seed(length)
    q, k, v = (
        torch.randn(
            len(lengths), 3, length, 8, generator=generator, dtype=torch.float64
        ).requires_grad_()
        for _ in range(3)
    )
    padding_mask = padding(lengths, length)
    ours = SlidingWindowAttention(padding_mask, half_window)(q, k, v, dropout_p=0.0, scale=0.3)
    expected = band_attention(q, k, v, padding_mask, half_window, 0.3)
    assert ours.shape == expected.shape and torch.isfinite(ours).all()  # padding rows too
    real = ~padding_mask
    assert (ours - expected).transpose(1, 2)[real].abs().max() < 1e-12
    # gradients of a loss over the real queries
    weights = torch.randn(ours.shape, generator=generator, dtype=torch.float64)
    weights = weights * real[:, None, :, None]
    ours_grads = torch.autograd.grad((ours * weights).sum(), (q, k, v))
    expected_grads = torch.autograd.grad((expected * weights).sum(), (q, k, v))
    for found, wanted in zip(ours_grads, expected_grads):
        assert torch.isfinite(found).all() and (found - wanted).abs().max() < 1e-12


def test_no_attention_mask_grows_with_t_squared():
    """At 8,192 tokens the sliding layers' mask holds T x (block + window) entries (blocks of
    the half window, 64 for ModernBERT's 128) and a full layer's one row of keys per sequence;
    no padding, no mask at all."""
    length, half_window = 8192, 64
    padded = padding([8192, 5000], length)
    sliding = SlidingWindowAttention(padded, half_window)
    assert sliding.mask.shape == (2 * length // half_window, 1, half_window, 3 * half_window)
    assert sliding.mask.numel() == 2 * length * 3 * half_window  # 2.4% of 2 x T x T
    assert FullAttention(padded).keys.shape == (2, 1, 1, length)
    assert FullAttention(padding([length], length)).keys is None


def test_full_attention_with_dropout_on_the_cpu_keeps_chunks_not_t_squared(monkeypatch):
    """Attention dropout on the CPU (the sweep's --attention-dropout; torch's CPU flash kernel has
    no dropout) runs a full layer whose scores exceed a chunk over chunks of queries recomputed
    in the backward pass: each chunk's dropout is drawn again from the same random state, so
    outputs and gradients are those of the chunks kept in memory; without dropout the chunks
    are SDPA exactly."""
    monkeypatch.setattr(modernbert_attention, "CHUNK_SCORES", 2 * 3 * 8 * 23)  # chunks of 8 queries
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 23, 8, generator=generator).requires_grad_() for _ in range(3))
    keys = ~padding([23, 11], 23)[:, None, None, :]
    weights = torch.randn(2, 3, 23, 8, generator=generator)
    size = modernbert_attention.query_chunk(2, 3, 23)
    assert size == 8

    def gradients(output):
        return [output] + list(torch.autograd.grad((output * weights).sum(), (q, k, v)))

    exact = gradients(modernbert_attention.ChunkedAttention.apply(q, k, v, keys, 0.0, 0.35))
    sdpa = gradients(F.scaled_dot_product_attention(q, k, v, attn_mask=keys, scale=0.35))
    for found, wanted in zip(exact, sdpa):
        assert (found - wanted).abs().max() < 1e-6
    torch.manual_seed(7)
    dropped = gradients(FullAttention(padding([23, 11], 23))(q, k, v, 0.3, 0.35))
    torch.manual_seed(7)
    kept = gradients(
        torch.cat(
            [
                F.scaled_dot_product_attention(
                    q[:, :, start : start + size], k, v, attn_mask=keys, dropout_p=0.3, scale=0.35
                )
                for start in range(0, 23, size)
            ],
            dim=2,
        )
    )
    assert not torch.equal(dropped[0], sdpa[0])  # dropout did drop
    for found, wanted in zip(dropped, kept):
        assert (found - wanted).abs().max() < 1e-6


@pytest.fixture(scope="module")
def modernbert_window_16(tmp_path_factory):
    """(transformers dir, import-hf dir): a random ModernBERT, window 16 (8 each side), layers
    sliding, full, sliding."""
    return save_and_import(
        tmp_path_factory.mktemp("modernbert16"),
        "modernbert",
        local_attention=16,
        num_hidden_layers=3,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    )


@pytest.mark.parametrize("lengths", [[5, 3], [9, 4], [10, 7], [29, 17], [40, 31], [203, 90]])
def test_outputs_and_gradients_equal_transformers_at_block_edges(modernbert_window_16, lengths):
    """Rows shorter than the window, at its edge, one token past, not a multiple of the block,
    a last block all padding, many blocks: hidden states and MLM logits within 1e-4 fp32 of
    transformers' ModernBertForMaskedLM (sdpa, its T x T masks), and the gradient of every layer
    weight under an MLM loss over the real tokens."""
    hf_dir, imported = modernbert_window_16
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    hf_model = transformers.ModernBertForMaskedLM.from_pretrained(
        hf_dir, attn_implementation="sdpa"
    ).eval()
    model, _ = load_fairseq(imported)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, imported)
    batch = modernbert_inputs(tokenizer, lengths)
    real = batch["attention_mask"].bool()
    targets = torch.randint(0, len(tokenizer), real.shape, generator=torch.Generator())
    expected = hf_model(**batch, output_hidden_states=True)
    F.cross_entropy(expected.logits[real], targets[real]).backward()
    logits, _ = model(to_fairseq[batch["input_ids"]])
    F.cross_entropy(logits[:, :, to_fairseq][real], targets[real]).backward()
    with torch.no_grad():
        features, _ = model(to_fairseq[batch["input_ids"]], features_only=True)
    assert (features - expected.hidden_states[-1])[real].abs().max() < TOLERANCE
    assert (logits[:, :, to_fairseq] - expected.logits)[real].abs().max() < TOLERANCE
    theirs = dict(hf_model.named_parameters())
    compared = 0
    for name, parameter in model.named_parameters():
        if ".layers." not in name:
            continue
        wanted = theirs["model.layers." + name.split(".layers.", 1)[1]].grad
        assert (parameter.grad - wanted).abs().max() < TOLERANCE * max(1, wanted.abs().max())
        compared += 1
    assert compared == len([n for n in theirs if n.startswith("model.layers.")])


def long_ner_release(folder: Path, words: int) -> list[list[str]]:
    """An NCBI-disease release (BioBERT's word-per-line files) whose splits each hold a document
    (the sample split's sentences run together, again and again, to `words` words) and two short
    sentences. Returns each split's document's words."""
    folder.mkdir()
    documents = []
    for split in ("train", "devel", "test"):
        sentences = (NER_SAMPLE / f"{split}.tsv").read_text().strip().split("\n\n")
        lines, taken = [], 0
        while len(lines) < words:
            lines += sentences[taken % len(sentences)].splitlines()
            taken += 1
        short = "\n\n".join(sentences[:2])
        (folder / f"{split}.tsv").write_text("\n".join(lines) + f"\n\n{short}\n")
        documents.append([line.split("\t")[0] for line in lines])
    return documents


@pytest.mark.slow
def test_an_imported_modernbert_fine_tunes_at_8192_positions(tmp_path):
    """convert-task --max-positions 8192 keeps a document of thousands of tokens one example with
    the ids its tokenizer gives (nothing cut at 512), `bio-roberta finetune` trains a tiny
    imported ModernBERT on it at that length, and the run's batches hold each example whole on a
    row of its own (nothing packed across examples)."""
    started = time.perf_counter()
    hf_dir, vocab = save_and_import(tmp_path, "modernbert", max_position_embeddings=8192)
    release = tmp_path / "ncbi-disease"
    documents = long_ner_release(release, words=900)
    data_root = tmp_path / "finetune-bin"
    convert = ["convert-task", "ncbi-disease", "--data", str(release), "--vocab", str(vocab)]
    convert += ["--out", str(data_root / "ncbi-disease"), "--max-positions", "8192"]
    assert cli_main(convert) == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    eos = int(to_fairseq[tokenizer.sep_token_id])
    data = data_root / "ncbi-disease"
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["max_positions"] == 8192
    for split, words in zip(("train", "valid", "test"), documents):
        rows = converted_rows(data, split)
        assert len(rows) == 3  # the document and two short sentences: none split into pieces
        ids = tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]
        assert rows[0] == to_fairseq[torch.tensor(ids)].tolist() + [eos]
        assert 2500 < len(rows[0]) < 8191  # far past 512, whole

    results = tmp_path / "results"
    finetune = ["finetune", "--task", "ncbi-disease", "--seed", "1", "--pretrained"]
    finetune += [str(vocab / "model.pt"), "--data-root", str(data_root), "--results", str(results)]
    finetune += ["hparams.batch_size=2", "hparams.max_epoch=2", "num_workers=0", "cpu=true"]
    assert cli_main(finetune) == 0
    (path,) = results.rglob("result.json")
    record = json.loads(path.read_text())
    assert record["status"] == "ok" and record["config"]["max_positions"] == 8192
    log = Path(record["log"]).read_text()
    assert "num_updates 4" in log or "num_updates=4" in log  # 2 epochs of 2 batches

    from bio_roberta.prediction.predictions import load_finetuned

    model, task = load_finetuned(Path(record["checkpoint"]["path"]), data)
    assert model.encoder.sentence_encoder.max_positions() == 8192
    task.load_dataset("train")
    dataset = task.dataset("train")
    iterator = task.get_batch_iterator(
        dataset=dataset, max_sentences=2, max_positions=task.max_positions()
    )
    rows = converted_rows(data, "train")
    bos, pad = task.dictionary.bos(), task.dictionary.pad()
    seen = []
    for batch in iterator.next_epoch_itr(shuffle=True):
        for i, tokens in zip(batch["id"].tolist(), batch["net_input"]["src_tokens"].tolist()):
            assert [token for token in tokens if token != pad] == [bos, *rows[i]]
            seen.append(i)
    assert sorted(seen) == [0, 1, 2]  # every example, the document whole
    print(f"8,192-position fine-tune test: {time.perf_counter() - started:.1f} s")


@pytest.mark.slow
def test_benchmark_long_prints_both_routes_at_each_length():
    """scripts/benchmark_long.py at its tiny shape, two lengths, the training step only, one
    step: each route and length measured in a process of its own, on the same weights (logits
    within 1e-4), the step's memory and the growth from the shorter length to the longer."""
    done = subprocess.run(
        [sys.executable, REPO / "scripts" / "benchmark_long.py", "--shape", "tiny",
         "--lengths", "40,100", "--modes", "train", "--steps", "1", "--repeats", "1"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout)
    assert result["shape"]["name"] == "tiny" and result["max_abs_logit_difference"] < TOLERANCE
    for length in ("40", "100"):
        routes = result["lengths"][length]
        assert set(routes) == {"train"}
        for route in ("ours", "transformers"):
            (run,) = routes["train"][route]["runs"]
            assert run["seconds_per_example"] > 0 and run["peak_rss_mb"] >= run["step_rss_mb"]
        assert set(routes["train"]["ours_over_transformers"]) == {"seconds", "memory"}
    growth = result["growth"]
    assert growth["from_to_tokens"] == [40, 100]
    assert set(growth) == {"from_to_tokens", "train_ours", "train_transformers"}
