"""The README.md of an export dir: a Hugging Face model card written from the manifests export-hf
can reach, so a published model says what it was trained on and how well it did.

Where each fact comes from (docs/artifacts.md): the architecture from the exported config; the
training corpora from the checkpoint's data-bin manifests (binarize) and the text-dir manifests
they name (parse-pubmed/-pmc/-mimic); for a fine-tuned run the task, seed and scores from the
run's result.json (RESULTS/<task>/seed<s>/result.json beside checkpoints/, checked to be of this
checkpoint by its sha256), and the corpora of the pretrained checkpoint it names; the tokenizer's
kind, and for an imported model its source (and licence, from the source's own card), from the
vocabulary manifest; the memorisation audit from export-hf's gate (bio_roberta/hf/export_audit.py).
What none of these gives is written as unknown, never guessed.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Optional, Sequence

from bio_roberta.audit.lineage import TrainingData
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.fairseq_keys import MASKED_LM, TOKEN_CLASSIFICATION

logger = logging.getLogger(__name__)

CARD_FILE = "README.md"

# parse-<source>'s name in the manifest -> what the corpus is
CORPORA = {
    "pubmed": "PubMed abstracts",
    "pmc": "PubMed Central full-text articles",
    "mimic": "MIMIC-III clinical notes",
    "text": "plain text",
}
MIMIC_NOTE = (
    "**MIMIC-III licence note.** MIMIC-III is distributed by PhysioNet under credentialed access "
    "and its data use agreement (PhysioNet Credentialed Health Data License). A model trained on "
    "its notes may memorise parts of them: do not share this model outside those terms without "
    "checking that the agreement allows it."
)
TOKENIZERS = {
    "gpt2": "byte-level BPE (RoBERTa's GPT-2 format), ids remapped to the fairseq dictionary",
    "sentencepiece": "SentencePiece, ids remapped to the fairseq dictionary",
    "wordpiece": "WordPiece (the imported model's own tokenizer)",
    "hf_bpe": "byte-level BPE (the imported model's own tokenizer)",
}
AUTO_CLASSES = {
    MASKED_LM: "AutoModelForMaskedLM",
    TOKEN_CLASSIFICATION: "AutoModelForTokenClassification",
}
PIPELINE_TAGS = {MASKED_LM: "fill-mask", TOKEN_CLASSIFICATION: "token-classification"}
# an imported dir inside the Hugging Face cache names its Hub repository
HUB_CACHE_DIR = re.compile(r"(?:^|/)models--([^/]+?)--([^/]+)/snapshots/[^/]+/?$")
UNKNOWN = "unknown"


def imported_source(vocab_manifest: dict[str, Any]) -> tuple[Optional[str], Optional[str], str]:
    """(Hub id, licence, local dir) of the model import-hf imported the vocabulary from."""
    source = (vocab_manifest.get("options") or {}).get("imported_from")
    if not source:
        return None, None, ""
    hub = HUB_CACHE_DIR.search(source)
    license_ = None
    card = Path(source) / CARD_FILE
    if card.is_file():
        from huggingface_hub import ModelCard

        try:
            license_ = ModelCard.load(card).data.license
        except Exception as error:  # noqa: BLE001 - a card we cannot read gives no licence
            logger.warning("%s: not a readable model card (%s); licence unknown", card, error)
    return (f"{hub.group(1)}/{hub.group(2)}" if hub else None), license_, source


def count(n: Optional[int]) -> str:
    return UNKNOWN if n is None else f"{n:,}"


def count_by_split(counts: Optional[dict[str, int]]) -> str:
    if not counts:
        return UNKNOWN
    return ", ".join(f"{count(n)} {split}" for split, n in sorted(counts.items()))


def data_section(training: TrainingData, imported: str) -> list[str]:
    lines = ["## Training data", ""]
    if imported:
        lines += [
            (
                f"Starts from the model imported from `{imported}` (`bio-roberta import-hf`); what "
                "that model was trained on is its own card's."
            ),
            "",
        ]
    for corpus in training.corpora:
        name = CORPORA.get(corpus["source"], f"source {corpus['source']!r}")
        lines.append(
            f"- {name} (`{corpus['text_dir']}`): documents {count_by_split(corpus['documents'])}; "
            f"sentences {count_by_split(corpus['sentences'])}; binarized into "
            f"`{corpus['data_bin']}` ({count(corpus['data_bin_train_tokens'])} training tokens)"
            + (f"; through {corpus['via']}" if corpus.get("via") else "")
        )
    for why in training.unknown:
        lines.append(f"- Unknown: {why}.")
    if not training.corpora and not training.unknown:
        lines.append("- Unknown.")
    if training.mimic:
        lines += ["", MIMIC_NOTE]
    return lines + [""]


def finetuning_section(
    kind: str, spec: Optional[TaskSpec], record: Optional[dict[str, Any]], no_record: str
) -> list[str]:
    lines = ["## Fine-tuning", ""]
    if kind == MASKED_LM:
        return lines + ["None: a masked language model (pretrained or distilled).", ""]
    task = spec.name if spec is not None else (record or {}).get("task")
    lines.append(f"- Task: {task or UNKNOWN}" + (f" ({spec.display})" if spec else ""))
    if record is None:
        return lines + [f"- Scores: unknown ({no_record}).", ""]
    unit = record.get("score_unit", "fraction")
    lines += [
        f"- Metric: {record.get('metric')}; scores as a {unit}",
        f"- Test score: {record.get('test_score')} ({record.get('test_examples')} test examples)",
        f"- Validation score: {record.get('valid_score')}",
        (
            f"- Seed: {record.get('seed')}; fold: {record.get('fold')}; checkpoint: "
            f"{record.get('checkpoint_selection')}"
        ),
        f"- From: the run's record `{record['path']}`",
        "",
    ]
    return lines


def how_to_load(kind: str, out_dir: Path) -> list[str]:
    auto = AUTO_CLASSES.get(kind, "AutoModelForSequenceClassification")
    return [
        "## How to load",
        "",
        "Replace the path with the Hub repository's name once uploaded.",
        "",
        "```python",
        f"from transformers import AutoTokenizer, {auto}",
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{out_dir}")',
        f'model = {auto}.from_pretrained("{out_dir}")',
        "```",
        "",
    ]


def model_card(
    out_dir: Path,
    checkpoint: Path,
    config,
    max_length: int,
    kind: str,
    spec: Optional[TaskSpec],
    training: TrainingData,
    vocab_manifest: dict[str, Any],
    manifest: dict[str, Any],
    warning: Sequence[str] = (),
    audit_section: Sequence[str] = (),
) -> str:
    """The card's text; out_dir is where the export will be (what the snippet loads), max_length
    the tokenizer's (the positions a text may fill, special tokens included); warning: lines that
    open the card, audit_section: the memorisation audit's (both from export-hf's gate,
    bio_roberta/hf/export_audit.py)."""
    from huggingface_hub import ModelCardData

    sha256 = manifest["checkpoint"]["sha256"]
    base_model, license_, imported = imported_source(vocab_manifest)
    tags = ["bio-roberta", "roberta", "fairseq", "biomedical"]
    if training.mimic:
        tags.append("clinical")
    data = ModelCardData(
        library_name="transformers",
        language="en",
        license=license_,
        base_model=base_model,
        tags=tags,
        pipeline_tag=PIPELINE_TAGS.get(kind, "text-classification"),
    )
    tokenizer = vocab_manifest.get("kind")
    lines = [
        f"# {out_dir.name}",
        "",
        "## Model description",
        "",
        f"A transformers {manifest['hf_model_class']} exported by `bio-roberta export-hf` "
        f"from the fairseq checkpoint `{checkpoint}`: {config.num_hidden_layers} layers, hidden "
        f"size {config.hidden_size}, {config.num_attention_heads} attention heads, feed-forward "
        f"size {config.intermediate_size}, inputs of up to {max_length} tokens, "
        f"{config.vocab_size:,} tokens"
        + (f"; head `{manifest['head']}`" if manifest["head"] else "")
        + (f"; labels {', '.join(manifest['labels'])}" if manifest["labels"] else "")
        + ".",
        "",
        *data_section(training, imported),
        *audit_section,
        *finetuning_section(kind, spec, training.record, training.no_record),
        "## Tokenizer",
        "",
        f"{tokenizer}: {TOKENIZERS.get(tokenizer, UNKNOWN)}.",
        "",
        *how_to_load(kind, out_dir),
        "## Licence",
        "",
        (
            f"{license_}, the licence of the imported model `{imported}`."
            if license_
            else "Unknown: no manifest this export can reach names one."
        ),
        "",
        "## Provenance",
        "",
        (
            f"- bio-roberta {manifest.get('package_versions', {}).get('bio-roberta') or UNKNOWN}, "
            f"git revision {manifest.get('git_revision') or UNKNOWN}"
        ),
        f"- Checkpoint sha256 {sha256}",
        "- Every input's sha256 is in manifest.json beside this card.",
        "",
    ]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join([*warning, *lines])
