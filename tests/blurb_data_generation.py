"""BLURB's own data generation, ported: the functions of its data_generation/preprocessor.py that
make the files LinkBERT's scripts/preprocess_blurb.py reads (tests/blurb_toy.py ports that
script), so that test copies of BLURB's release are made from public source files by the code
that made the release, never from a description of it.

Source: BLURB's sample_code/data_generation.tar.gz (microsoft.github.io/BLURB), whose
preprocessor.py a public repository holds: github.com/leonweber/biomuppet at
f93526f17a5cd89cbfe7882289a28656b0bd011e, BLURB/preprocessor.py. Ported with their logic
unchanged: paths become arguments and return values (lines, as the original writes them), the
index files BLURB reads (indexing/DDI/<split>_files.tsv) become a list of documents, and
xml.etree.cElementTree (gone since Python 3.9) is xml.etree.ElementTree, which parses alike.

One departure, in prepare_ddi_lines only: the DDI corpus copy at hand (github.com/isegura/
DDICorpus at 819b0fa) has one Train pair, DDI-DrugBank.d236.s29.p0, with ddi="true" and no type,
on which the original's ``pair.attrib['type']`` stops; BLURB's copy of the corpus (its
DDIextraction_2013 folder) let it through, with a label this copy cannot tell. It is written
``DDI-false`` here (TYPELESS_LABEL): BLURB's train is checked by its ids, which this pair keeps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable
from xml.etree import ElementTree as ET

# prepare_jnlpba_data's split of Genia4ERtask2.iob2: "we adopted the same train/dev split as MTL"
JNLPBA_SPLIT_LINE = 465497
# preprocess_GAD_corpus: rows 1-4261 of BioBERT's fold 1 train.tsv are train, the rest dev
GAD_TRAIN_ROWS = 4261
TYPELESS_LABEL = "DDI-false"


def preprocess_ner_data(lines: list[str]) -> list[str]:
    """preprocess_ner_data for one file: each token's tag cut to its first letter (B, I, O);
    blank and -DOCSTART- lines kept."""
    out = []
    for line in lines:
        if not line.split() or line.startswith("-DOCSTART-"):
            out.append(line)
        else:
            token, label = line.split("\t")
            out.append(f"{token}\t{label[0]}\n")
    return out


def prepare_jnlpba_lines(lines: list[str]) -> list[str]:
    """prepare_jnlpba_data's change_doc_start: ###MEDLINE:<id> lines become -DOCSTART- <id>
    (then preprocess_ner_data; the train/dev cut at JNLPBA_SPLIT_LINE is the caller's)."""
    return [
        line.replace("###MEDLINE:", "-DOCSTART- ") if line.startswith("###MEDLINE") else line
        for line in lines
    ]


def preprocess_gad_corpus(train: list[str], test: list[str]) -> dict[str, list[str]]:
    """preprocess_GAD_corpus: BLURB's GAD train/dev/test.tsv lines from BioBERT's fold 1
    1/train.tsv and 1/test.tsv lines."""
    out = {}
    for batch, rows in (("train", train[:GAD_TRAIN_ROWS]), ("dev", train[GAD_TRAIN_ROWS:])):
        numbered = [f"{idx}\t{line}" for idx, line in enumerate(rows)]
        out[batch] = ["index\tsentence\tlabel\n", *numbered]
    out["test"] = list(test)
    return out


def split_sent(e1_span_s, e1_span_e, e2_span_s, e2_span_e, sent):
    # if e1 e2 not overlaping, output 5 chunks; else output 3
    pos_list = [e1_span_s, e1_span_e, e2_span_s, e2_span_e]
    if e1_span_e > e2_span_s:
        entity_s = min(e1_span_s, e2_span_s)
        entity_e = max(e1_span_e, e2_span_e)
        pos_list = [entity_s, entity_e]
    spans = zip([0] + pos_list, pos_list + [len(sent)])
    return [sent[s:e] for (s, e) in spans]


def clean_sent(sent):
    for special_char in ["\n", "\t", "\r"]:
        sent = sent.replace(special_char, " ")
    return sent


def extract_span_DDI(span_str):
    candidates = re.findall(r"\d+", span_str)
    # When multiple spans occurs, only taking the very first and last positions
    return [int(candidates[0]), int(candidates[-1]) + 1]


def prepare_ddi_lines(data_file_paths: Iterable[Path]) -> list[str]:
    """prepare_DDI_data for one split: the mask-method lines (pair id, sentence with the pair's
    drugs as @DRUG$, label) of every pair of the given XML files, in their order."""
    processed_data_mask = []
    for data_file_path in data_file_paths:
        root = ET.parse(data_file_path).getroot()
        for sent in list(root):
            if sent.find("pair") is None:
                continue
            text = sent.attrib.get("text")
            candidate_ref_dict = {e.get("id"): e.attrib for e in sent.findall("entity")}
            for pair in sent.findall("pair"):
                pair_id, e1_id, e2_id, label = (
                    pair.attrib["id"],
                    pair.attrib["e1"],
                    pair.attrib["e2"],
                    pair.attrib["ddi"],
                )
                if label == "true":
                    label = pair.attrib.get("type")  # ["type"] in the original: the departure
                label = f"DDI-{label}" if label else TYPELESS_LABEL
                e1 = candidate_ref_dict[e1_id]
                e2 = candidate_ref_dict[e2_id]
                # Ensuring e1 is the first entity.
                if extract_span_DDI(e1["charOffset"])[0] > extract_span_DDI(e2["charOffset"])[0]:
                    e1, e2 = e2, e1
                e1_span_s, e1_span_e = extract_span_DDI(e1["charOffset"])
                e2_span_s, e2_span_e = extract_span_DDI(e2["charOffset"])
                chunks = split_sent(e1_span_s, e1_span_e, e2_span_s, e2_span_e, text)
                if len(chunks) == 5:
                    chunk1, _e1, chunk3, _e2, chunk5 = chunks
                    processed_sent_mask = f"{chunk1}@DRUG${chunk3}@DRUG${chunk5}"
                else:
                    chunk1, _entity, chunk3 = chunks
                    processed_sent_mask = f"{chunk1}@DRUG-DRUG${chunk3}"
                processed_data_mask.append(
                    f"{pair_id}\t{clean_sent(processed_sent_mask)}\t{label}\n"
                )
    return processed_data_mask
