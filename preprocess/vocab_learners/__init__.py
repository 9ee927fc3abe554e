"""One module per vocabulary learner, each writing one kind of vocabulary dir (its BPE files and
dict.txt); preprocess/learn_vocab.py lists them in LEARNERS."""
