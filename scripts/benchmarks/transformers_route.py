"""Hugging Face transformers' RobertaForMaskedLM on the same batch, masking and accumulation as
the fairseq routes: the peer our route is measured against."""

import statistics
import time

from benchmarks.cpu_shape import BATCH, HEADS, LAYERS, SEQ, VOCAB, WIDTH
from benchmarks.flops import MASK_PROB
from benchmarks.memory import peak_memory


def measure_transformers(
    steps,
    layers=LAYERS,
    width=WIDTH,
    heads=HEADS,
    ffn=4 * WIDTH,
    vocab=VOCAB,
    seq=SEQ,
    batch=BATCH,
    update_freq=1,
    cpu=True,
    bf16=False,
):
    """RobertaForMaskedLM with AdamW, accumulating UPDATE_FREQ batches per update as fairseq does;
    in bf16 through torch.autocast (fp32 master weights). Tokens/s = median over updates after the
    first two. On the CPU each update is timed from its batches' masking
    (DataCollatorForLanguageModeling) to its optimizer step, as fairseq's wps there times the
    loading and masking of its batches (no loader workers) with the update; on a GPU from the
    masked batches on, as fairseq's loader workers mask there while the GPU computes. The
    masking's own seconds beside it."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import (
        DataCollatorForLanguageModeling,
        PreTrainedTokenizerFast,
        RobertaConfig,
        RobertaForMaskedLM,
    )

    device = "cpu" if cpu else "cuda"
    vocabulary = {f"w{i}": i for i in range(vocab)}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocabulary, unk_token="w3")),
        pad_token="w1",
        mask_token=f"w{vocab - 1}",
        unk_token="w3",
    )
    collator = DataCollatorForLanguageModeling(
        tokenizer, mlm_probability=MASK_PROB
    )  # 80/10/10 by default
    model = RobertaForMaskedLM(
        RobertaConfig(
            vocab_size=vocab,
            hidden_size=width,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=ffn,
            max_position_embeddings=seq + 2,
            pad_token_id=1,
        )
    ).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=6e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01
    )
    times, masking = [], []
    for _ in range(steps):
        examples = [
            [{"input_ids": torch.randint(4, vocab - 1, (seq,)).tolist()} for _ in range(batch)]
            for _ in range(update_freq)
        ]
        if not cpu:
            torch.cuda.synchronize()
        start = time.perf_counter()
        batches = [
            {key: value.to(device) for key, value in collator(rows).items()} for rows in examples
        ]
        masked = time.perf_counter()
        for inputs in batches:
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
                loss = model(**inputs).loss
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if not cpu:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - (start if cpu else masked))
        masking.append(masked - start)
    return {
        "tokens_per_s": round(update_freq * batch * seq / statistics.median(times[2:]), 1),
        "masking_seconds_per_update": round(statistics.median(masking[2:]), 5),
        **peak_memory(cpu),
    }
