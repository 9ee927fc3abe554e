"""A fine-tuned model's predictions: on its task's test split during the run (predictions, in
the formats of prediction_files), and on new text (predictor, of the inputs input_files reads,
of a run dir, checkpoint or export that finetuned_files resolves)."""
