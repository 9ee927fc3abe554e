"""What import-hf and export-hf ask of a transformers model family (``Family``), and what every
family's mapping shares: transformers' task model of each head kind, the activations both
libraries compute (fairseq's own names are bio_roberta_core/fairseq_keys.py's).

A family is a module: roberta.py, bert.py (BERT, ELECTRA's discriminator, Megatron-BERT),
modernbert.py each define theirs; families.py lists them by config.json's model_type and by
fairseq architecture. import_hf.py and model_files.py (import-hf), weights.py and export_hf.py
(export-hf) call only this interface, so a new family is a new module plus its line there."""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.fairseq_keys import (
    ENCODER,
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
)

# transformers' task model of each kind: <family's class prefix><suffix>
CLASS_SUFFIX = {
    MASKED_LM: "ForMaskedLM",
    SEQUENCE_CLASSIFICATION: "ForSequenceClassification",
    TOKEN_CLASSIFICATION: "ForTokenClassification",
}
# fairseq activation -> transformers hidden_act with the same formula, and back
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_accurate": "gelu_new", "relu": "relu", "tanh": "tanh"}
FAIRSEQ_ACTIVATIONS = {hf: fairseq for fairseq, hf in HF_ACTIVATIONS.items()}
# transformers' config fields of fairseq's special tokens: <s> is [CLS] and bos, </s> [SEP] and eos
CONFIG_SPECIAL_TOKENS = {
    "pad_token_id": "<pad>",
    "bos_token_id": "<s>",
    "eos_token_id": "</s>",
    "cls_token_id": "<s>",
    "sep_token_id": "</s>",
}

# A weight's shape as the config fields of its dimensions (model_files.check_weights sizes them)
Shapes = dict[str, tuple[str, ...]]


def take_rows(tensor, rows: list[Optional[int]]):
    """tensor's rows in fairseq's dictionary order (import_hf.hf_rows); zero where a row has no
    transformers counterpart."""
    import torch

    out = tensor.new_zeros((len(rows), *tensor.shape[1:]))
    have = [i for i, row in enumerate(rows) if row is not None]
    out[have] = tensor[torch.tensor([rows[i] for i in have])]
    return out


class ConfigProblem(BioRobertaError):
    """What of config.json the fairseq model cannot compute, in one line (import-hf names the
    file)."""


class Family(ABC):
    """One transformers model family, both ways. Import reads a transformers dir: the family's
    config.json (model_type), the weights its mapping reads, named without the base model's
    prefix; export writes a fairseq checkpoint of the family's architecture as its transformers
    classes."""

    model_type: str  # config.json's model_type
    arch: str  # the fairseq architecture it imports as
    vocabulary: str  # the vocabulary dir kind of its tokenizer (preprocess/vocab_dir.py)
    base_prefix: str  # what transformers' task models put before the base model's weights
    layer_prefix: str  # the base model's name of its layers, before the layer number
    left_out: tuple[str, ...]  # weights its files may hold that import reads nowhere (prefixes)
    hf_class_prefix: str  # transformers' classes: <prefix>Config, <prefix>ForMaskedLM, ...
    # transformers' MLM decoder weight (a tied model's file has none; None: no MLM head)
    decoder_weight: Optional[str]
    token_embeddings: str  # transformers' token embedding weight (a tied decoder's)
    config_special_tokens: tuple[str, ...]  # the fields of CONFIG_SPECIAL_TOKENS its config has

    # import-hf

    def untied_decoder(self, hf: dict[str, Any]) -> bool:
        """Whether the MLM head's output projection is its own (a tied model's file leaves it
        out, or holds the embeddings again)."""
        decoder = hf.get(self.decoder_weight) if self.decoder_weight else None
        return decoder is not None and not decoder.equal(hf[self.token_embeddings])

    def read_config(self, hf_dir: Path, raw: dict[str, Any]) -> Any:
        """config.json (raw) as model_options reads it, read once: raw itself; a ConfigProblem
        names what of it the fairseq model cannot compute."""
        return raw

    def derived_sizes(self, sizes: dict[str, int]) -> dict[str, int]:
        """Sizes the weights' shapes name beyond config.json's fields (expected_weights)."""
        return {}

    @abstractmethod
    def expected_weights(self, raw: dict[str, Any], layers: int) -> Shapes:
        """The base model's weights the mapping reads, with their shapes."""

    @abstractmethod
    def mlm_head_weights(self, raw: dict[str, Any]) -> tuple[Shapes, set[str]]:
        """(the MLM head's weights the mapping reads, with their shapes; the optional ones among
        them: an untied decoder, which a tied model's file leaves out); empty: it has none."""

    def fairseq_args(self, config: Any, hf: dict[str, Any]) -> argparse.Namespace:
        """The fairseq model options of config.json (config: read_config's) and the weights (hf:
        an untied decoder stays untied), the architecture's defaults filling the others."""
        from fairseq.models import ARCH_CONFIG_REGISTRY

        import user_dir  # noqa: F401  (registers the plugin's architectures)

        args = argparse.Namespace(
            arch=self.arch,
            _name=self.arch,
            untie_weights_roberta=self.untied_decoder(hf),
            **self.model_options(config),
        )
        ARCH_CONFIG_REGISTRY[self.arch](args)
        return args

    @abstractmethod
    def model_options(self, config: Any) -> dict[str, Any]:
        """fairseq_args' options of this family (untie_weights_roberta aside) of config.json as
        read_config reads it: shape, activations, dropouts and the family's own."""

    @abstractmethod
    def fairseq_state(
        self, hf: dict[str, Any], rows: list[Optional[int]], layers: int, mlm: bool, untied: bool
    ) -> dict[str, Any]:
        """The fairseq weights of every weight read (hf, by the mapping's names), vocabulary-sized
        ones in fairseq's dictionary order (rows: take_rows); the MLM head's if mlm, its decoder
        the embeddings unless untied (fairseq_args' untie_weights_roberta)."""

    # export-hf

    @abstractmethod
    def max_length(self, state: dict[str, Any], model_cfg) -> int:
        """How many tokens, specials included, the model reads (the tokenizer's max length)."""

    def hf_config(
        self,
        state: dict[str, Any],
        model_cfg,
        vocab_size: int,
        kind: str,
        special_ids: dict[str, int],
    ):
        """transformers' config of the checkpoint's model (state, model options) with the task
        model of kind, the special tokens' ids those of fairseq's specials (<s>, <pad>, </s>,
        <unk>: original_ids.py)."""
        import transformers

        return getattr(transformers, self.hf_class_prefix + "Config")(
            vocab_size=vocab_size,
            hidden_size=state[ENCODER + "embed_tokens.weight"].shape[1],
            **{
                field: special_ids[CONFIG_SPECIAL_TOKENS[field]]
                for field in self.config_special_tokens
            },
            **self.config_options(state, model_cfg, kind),
        )

    @abstractmethod
    def config_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        """hf_config's other fields: the encoder's shape, activations, dropouts, the family's own;
        tie_word_embeddings says whether decoder_weight is the embeddings. A checkpoint its
        classes cannot hold is an ExportError."""

    @abstractmethod
    def hf_state(
        self, state: dict[str, Any], model_cfg, kind: str, head: Optional[str]
    ) -> dict[str, Any]:
        """transformers' weights of the encoder and of the head: the MLM head, or the
        classification head of kind named head; one transformers has no place for is an
        ExportError."""

    def hf_class(self, kind: str) -> str:
        return self.hf_class_prefix + CLASS_SUFFIX[kind]
