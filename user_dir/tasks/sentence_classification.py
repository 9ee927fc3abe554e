"""fairseq's sentence_prediction (one label or score per example or text pair) with the encoder
implementation choice of the plugin's other fine-tuning tasks (``encoder_implementation``,
user_dir/tasks/_finetune_bin.py): on the CPU its batches of varied lengths run unpadded; and their
``group_by_length``.

Data, options, heads and checkpoints are sentence_prediction's; a model fine-tuned with either task
loads with either.
"""

from dataclasses import dataclass

from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

from user_dir.tasks._finetune_bin import (
    EncoderChoiceConfig,
    LengthGroupingConfig,
    grouped_by_length,
    run_encoder_as_chosen,
)


@dataclass
class SentenceClassificationConfig(
    SentencePredictionConfig, EncoderChoiceConfig, LengthGroupingConfig
):
    pass


@register_task("sentence_classification", dataclass=SentenceClassificationConfig)
class SentenceClassificationTask(SentencePredictionTask):
    cfg: SentenceClassificationConfig

    def load_dataset(self, split, combine=False, **kwargs):
        dataset = grouped_by_length(super().load_dataset(split, combine, **kwargs), self.cfg)
        self.datasets[split] = dataset
        return dataset

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        run_encoder_as_chosen(model, self.cfg)
        return model
