"""Stage 3, fine-tuning: a sweep (sweep.py, its config sweep_config.py) of jobs, one per task x
seed (job.py), each training its runs with fairseq-train's command line (command_line.py),
predicting test with the selected checkpoint (predictions.py, written by prediction_files.py)
and writing one result record per run (results.py)."""
