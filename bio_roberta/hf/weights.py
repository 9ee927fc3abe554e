"""A fairseq checkpoint's weights as a transformers model of its family (families.exported_family):
the masked LM, or the sequence / token classification model of a fine-tuned head; the config says
the same architecture, and no weight is left out (missing keys are an error). Each family's
module maps the config and the weights; here, which head the checkpoint has, what its outputs
are named, and the check that the model holds exactly the checkpoint's weights."""

from __future__ import annotations

from typing import Any, Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.families import exported_family
from bio_roberta.hf.original_ids import FAIRSEQ_SPECIAL_IDS, OriginalIds
from bio_roberta_core.fairseq_keys import ENCODER, HEAD_PREFIXES, MASKED_LM


def head_of(state: dict[str, Any], head_name: Optional[str]) -> tuple[str, Optional[str]]:
    """(kind, head name) of the checkpoint: a classification head if it has one, else masked LM."""
    heads = {}
    for kind, prefix in HEAD_PREFIXES.items():
        for key in state:
            if key.startswith(prefix):
                heads[key[len(prefix) :].split(".")[0]] = kind
    if head_name is not None:
        if head_name not in heads:
            raise ExportError(
                f"no classification head {head_name!r}; the checkpoint has "
                f"{sorted(heads) or 'none'}"
            )
        return heads[head_name], head_name
    if not heads:
        return MASKED_LM, None
    if len(heads) > 1:
        raise ExportError(
            f"the checkpoint has several heads {sorted(heads)}; choose one with --head"
        )
    ((name, kind),) = heads.items()
    return kind, name


def build_hf_model(
    state,
    model_cfg,
    vocab_size: int,
    kind: str,
    head: Optional[str],
    labels: Optional[list[str]],
    problem_type: Optional[str] = None,
    decoding: Optional[str] = None,
    original_ids: Optional[OriginalIds] = None,
):
    """The transformers model holding exactly the checkpoint's weights (missing keys are an
    error). A head's outputs are named by labels, or left unnamed (labels None: a score);
    problem_type and decoding go to the config (bio_roberta.tasks.kinds.HFExport). vocab_size is
    the dictionary's (+<mask>); an imported model's rows go back to its original_ids."""
    import transformers

    family = exported_family(model_cfg)
    embed = state[ENCODER + "embed_tokens.weight"]
    if embed.shape[0] != vocab_size:
        raise ExportError(
            f"the checkpoint's embedding has {embed.shape[0]} rows but the dictionary (+<mask>) "
            f"has {vocab_size} entries: pass the dict.txt the model was trained with (--dict)"
        )
    special_ids = FAIRSEQ_SPECIAL_IDS
    if original_ids is not None:
        state, vocab_size = original_ids.restore(state), original_ids.vocab_size
        special_ids = original_ids.special_ids()
    config = family.hf_config(state, model_cfg, vocab_size, kind, special_ids)
    hf_state = family.hf_state(state, model_cfg, kind, head)
    if kind != MASKED_LM:
        outputs = state[f"{HEAD_PREFIXES[kind]}{head}.out_proj.bias"].shape[0]
        set_head_outputs(config, head, outputs, labels, problem_type, decoding)
    if config.tie_word_embeddings:  # the decoder is the embeddings
        hf_state.pop(family.decoder_weight, None)
    model = getattr(transformers, family.hf_class(kind))(config)
    missing, unexpected = model.load_state_dict(hf_state, strict=False)
    missing = [
        key for key in missing if not (config.tie_word_embeddings and key == family.decoder_weight)
    ]
    if missing or unexpected:
        raise ExportError(f"weight mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model.eval()


def set_head_outputs(
    config, head, outputs: int, labels, problem_type: Optional[str], decoding: Optional[str]
) -> None:
    """A head's outputs in its config: counted (labels None: a score each) or named by the labels
    (checked against them); problem_type and decoding (bio_roberta.tasks.kinds.HFExport) where
    given."""
    if labels is None:
        config.num_labels = outputs
    elif outputs != len(labels):
        raise ExportError(
            f"head {head!r} has {outputs} outputs but there are {len(labels)} labels "
            f"({', '.join(labels)}): is it a model of that task?"
        )
    else:
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
    if problem_type is not None:
        config.problem_type = problem_type
    if decoding is not None:
        config.decoding = decoding
