"""What proves each BLURB dataset's split BLURB's, measured on public files at named commits
(bio_roberta/blurb/split_check.py check_blurb_split reads it; docs/blurb_splits.md's
"BLURB's 13 splits" table gives the same per dataset).

Per split, one of:
- a content digest (split_check.split_digest: the sha256 of its sorted examples, ids left out), in
  BLURB_DIGESTS, measured on a public copy of BLURB's split: a copy of LinkBERT's release, or the
  files BLURB's own data generation and LinkBERT's script make of the public source files
  (tests/blurb_public_copies.py makes each and re-measures every digest);
- an id digest (suite.id_digest: the sha256 of its sorted example ids), in BLURB_ID_DIGESTS,
  where BLURB's documented rule says which examples the split holds but no public file gives
  their text as BLURB's release has it;
- BLURB's id lists (bio_roberta/readers/blurb_ids: PubMedQA, BIOSSES).
A dataset with a split none of these proves is in UNPROVEN, naming the one file that would.

Sources, read at these commits:
- LinkBERT's release (michiyasunaga/LinkBERT 210bc47 scripts/preprocess_blurb.py of BLURB's
  data_generation files): ../shared/data blurb_linkbert (NCBI-disease, BC5CDR-chem); a public copy,
  github.com/robert1ridley/BioMedData at f346e04 data/ (BC5CDR-disease, HoC, BioASQ, PubMedQA
  whole; BC2GM and DDI dev and test: its train.json contents are not in the snapshot read, its
  tree lists their git blob ids); github.com/luka-group/NLI_as_Indirect_Supervision at 276deb8
  data/GAD_hf (its README: gathered from LinkBERT).
- BLURB's data generation: its preprocessor.py, in github.com/leonweber/biomuppet at f93526f
  BLURB/preprocessor.py; Crichton et al.'s files, github.com/cambridgeltl/MTL-Bioinformatics-2016
  at df0df02 data/ (BLURB's NER source); the JNLPBA shared task's files,
  github.com/spyysalo/jnlpba at 4455122 original-data/; BioBERT's GAD folds and the DDI-2013
  corpus (github.com/isegura/DDICorpus at 819b0fa), ../shared/data re/.
"""

from __future__ import annotations

from typing import Optional

Digests = tuple[Optional[str], Optional[str], Optional[str]]  # train, dev, test; None: no proof

# split_digest of BLURB's train/dev/test, each measured where its comment says.
BLURB_DIGESTS: dict[str, Digests] = {
    # LinkBERT's tokcls/NCBI-disease_hf and BC5CDR-chem_hf in ../shared/data; BioMedData's are
    # byte for byte these; BLURB's rule on Crichton's NCBI-disease-IOB and BC5CDR-chem-IOB makes
    # them byte for byte.
    "ncbi-disease": ("cdd3cda7284a9181", "c6d397411c119280", "8d8dde7508be3b7c"),
    "bc5cdr-chem": ("5e97564d8f1e45cf", "6513e9a854ac3d88", "fcc96dae23b1851c"),
    # BioMedData's tokcls/BC5CDR-disease_hf (disease tags; the sentences are BC5CDR-chem's, the
    # corpus annotating both on one text); BLURB's rule on Crichton's BC5CDR-disease-IOB makes
    # its three files byte for byte.
    "bc5cdr-disease": ("e22e0a5523ff46f1", "70155f3006c17a06", "55e12d158cb42cbc"),
    # dev, test: BioMedData's tokcls/BC2GM_hf; train: BLURB's rule (preprocess_ner_data, then
    # LinkBERT's process_blurb_NER) on Crichton's BC2GM-IOB/train.tsv, whose output has the git
    # blob id BioMedData's tree lists for its train.json (c51de880), as the rule's dev and test
    # have those of its dev.json and test.json.
    "bc2gm": ("2b2fe5b798c7da2a", "7c51d9734d484ff2", "022589e41bdac685"),
    # dev: Crichton's JNLPBA/devel.tsv (BLURB's preprocessor: "the same train/dev split as MTL",
    # Crichton's; Gu et al.: "the same train, development, and test splits as in Crichton et
    # al."), test: the shared task's Genia4EReval2.iob2 (Crichton's test.tsv is it line for
    # line), each by BLURB's rule; 4551 and 8662 mentions, Table 3's. Train: UNPROVEN.
    "jnlpba": (None, "9f5fd5da7ac31c71", "2c2f7d3460dba575"),
    # dev, test: BioMedData's seqcls/DDI_hf (BLURB's rule on the DDI-2013 XML gives its test.json
    # line for line, in its document order, and its dev.json but for 21 pairs of two MedLine
    # documents, whose text BLURB's copy of the corpus gives otherwise); train: BLURB_ID_DIGESTS.
    "ddi": (None, "cf4f6933395ca803", "21936f0c9c764add"),
    # NLI_as_Indirect_Supervision's data/GAD_hf; BLURB's preprocess_GAD_corpus and LinkBERT's
    # script on BioBERT's fold 1 make its three files byte for byte, and our gad_blurb_fold1
    # reader reads the same examples from that fold.
    "gad-blurb": ("385bd74655848a83", "2f9603bc3efcdc49", "304bd495847093e0"),
    # BioMedData's seqcls/HoC_hf, bioasq_hf, pubmedqa_hf; PubMedQA's ids are fold 0 of
    # bio_roberta/readers/blurb_ids/pubmedqa.json and our reader's replay of ../shared/data
    # qa/PubMedQA gives the same three digests.
    "hoc-blurb": ("b1a9e672852d71cb", "28810674ef9fbd19", "dc70c3f518700552"),
    "pubmedqa": ("4ecb99881ca3023c", "f10c2975d3804cb7", "11ce5d911f3f052e"),
    "bioasq": ("0d193e7524c76510", "bd17e92e2f8af2ad", "007aedcbab8a52aa"),
}

# id_digest of BLURB's splits whose examples BLURB's rule names but whose text no public file
# gives as BLURB's release has it.
BLURB_ID_DIGESTS: dict[str, Digests] = {
    # DDI train, by BLURB's rule: every pair of the 714 DDI-2013 Train files not in a document of
    # BLURB's dev (its 624/90 file lists share the Train files out: 25,296 + 2,496 = all 27,792
    # pairs), ids the corpus's pair ids as LinkBERT's release keeps them; measured on the corpus
    # XML (../shared/data re/DDI-2013) less the 79 documents of BioMedData's dev.json. Every id of
    # NLI_as_Indirect_Supervision's 1% and 10% samples of the release's train.json is among them.
    "ddi": ("c43501fa4b036539", None, None),
}

# The datasets a split of which no public file at hand proves: the one file that would, and where
# BLURB's users get it. Their runs are unknown, never BLURB's (--score-any-split scores them).
UNPROVEN = {
    "jnlpba": (
        "train: Crichton's data/JNLPBA/train.tsv (cambridgeltl/MTL-Bioinformatics-2016, git blob "
        "5aa9d1ac, its content not in the snapshot read) or the shared task's Genia4ERtask2.iob2 "
        "(Genia4ERtraining.tar.gz); BLURB's users have it in LinkBERT's data.zip (its README's "
        "download), tokcls/JNLPBA_hf/train.json as preprocess_blurb.py writes it"
    ),
    "chemprot-blurb": (
        "all three: BLURB's data generation needs the BioCreative VI ChemProt corpus "
        "(ChemProt_Corpus.zip from the BioCreative site), not in the public repositories "
        "searched; BLURB's users have it in LinkBERT's data.zip, seqcls/chemprot_hf"
    ),
    "ebm-pico": (
        "all three: BLURB's data generation needs EBM-NLP's ebm_nlp_2_00.tar.gz (bepnye/EBM-NLP) "
        "and SciBERT's PMID lists (allenai/scibert data/pico/ebmnlp/train.txt), both not in the "
        "snapshots read; BLURB's users have it in LinkBERT's data.zip, tokcls/ebmnlp_hf"
    ),
}
