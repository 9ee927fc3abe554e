"""Where each registry task's files come from, under which terms, and the layout its reader takes
in `convert-task --data`: the facts docs/data.md's table is generated from
(`python -m bio_roberta.tasks.data_sources` prints it; tests/test_data_doc.py keeps the two equal
and this table in step with the registry)."""

from __future__ import annotations

from dataclasses import dataclass

BIOBERT = "BioBERT's benchmark datasets (linked from https://github.com/dmis-lab/biobert)"
BLUE = "BLUE's `bert_data` (https://github.com/ncbi-nlp/BLUE_Benchmark, releases)"
N2C2 = "n2c2 / i2b2 data use agreement (https://portal.dbmi.hms.harvard.edu), credentialed"
CORPUS_TERMS = "the original corpus's terms (research use); BioBERT redistributes it"
CRICHTON = "CC BY 4.0 (Crichton et al.'s copy, the upstream of BioBERT's)"
BLURB = "BLURB's data generation (https://microsoft.github.io/BLURB/submit.html)"

# Files `--data` holds, per TaskSpec.source_format (the reader's layout); UTF-8, tab-separated
# where tabular.
FORMAT_FILES = {
    "biobert_ner": "`train.tsv`, `devel.tsv`, `test.tsv`: `token<TAB>tag` per line, a blank line "
    "between sentences (BioBERT's NERdata; Crichton et al.'s `*-IOB` typed tags `B-Disease` read "
    "as `B` where the task's tags are untyped)",
    "blue_tsv": "`train.tsv`, `dev.tsv`, `test.tsv`: header `index sentence label`, the pair "
    "already replaced by placeholders (BLUE)",
    "blue_hoc": "`train.tsv`, `dev.tsv`, `test.tsv`, header `labels sentence index`; `labels` = "
    "`0_0,1_1,...,9_0` (every class id with its 0/1 flag), `index` = `<PMID>_s<n>`",
    "biobert_re_folds": "`1/` ... `10/`, each with `train.tsv` (`sentence<TAB>label`, no header) "
    "and `test.tsv` (header `index sentence label`); valid is 1 in 10 train rows by the hash of "
    "their sentence",
    "ddi_xml": "the DDI corpus XML: `Train/DrugBank`, `Train/MedLine`, `Test/Test for DDI "
    "Extraction task/{DrugBank,MedLine}`; one example per `<pair>`, its two drugs replaced by "
    "`@DRUG$` as BLUE does; valid is 1 in 4 Train documents by the hash of their id",
    "mednli_jsonl": "`mli_train_v1.jsonl`, `mli_dev_v1.jsonl`, `mli_test_v1.jsonl`: `sentence1`, "
    "`sentence2`, `gold_label`",
    "biosses_blue_rowdata": "BLUE's rowdata `train.tsv`, `dev.tsv`, `test.tsv` (all 100 pairs); "
    "placed in BLURB's 64/16/20 by pair number (`old_index` + 1)",
    "pubmedqa_pqal": "`ori_pqal.json`, `test_ground_truth.json`; train/dev = fold 0 of "
    "PubMedQA's `split_dataset.py`, replayed; context = `CONTEXTS` joined (the abstract without "
    "its conclusion)",
    "bioasq_yesno": "BLURB's `train/dev/test.jsonl` (`id question context label`), or "
    "`BioASQ-training7b/` + `Task7BGoldenEnriched/` (yes/no questions, snippets joined)",
    "ebm_pico": "EBM-NLP's `documents/` + `annotations/aggregated/starting_spans/`, or SciBERT's "
    "`train.txt`/`dev.txt`/`test.txt`",
    "linkbert_hf": "LinkBERT's BLURB release, its `<kind>/<name>_hf` folder (docs/finetune.md): "
    "`train.json`, `dev.json`, `test.json` JSON lines, or the same columns in Parquet files "
    "(`train`, `dev`/`validation`, `test`, as the Hugging Face hub ships them)",
    "gad_blurb_fold1": "BioBERT's GAD `1/train.tsv` (rows 1-4,261 train, the other 535 dev) and "
    "`1/test.tsv` (534): BLURB's single split, 128 positions, no folds",
}


@dataclass(frozen=True)
class DataSource:
    source: str  # where to get the files
    licence: str  # the terms they come under
    data_dir: str  # the folder of the download to pass as --data


def _biobert_ner(folder: str, licence: str = CORPUS_TERMS) -> DataSource:
    return DataSource(f"{BIOBERT}: `NERdata/{folder}`", licence, f"BioBERT/NERdata/{folder}")


def _i2b2_ner(year: str) -> DataSource:
    return DataSource(
        f"n2c2 {year} release, converted to token/tag files by bio-lm's scripts "
        "(https://github.com/facebookresearch/bio-lm)",
        N2C2,
        f"i2b2-{year}",
    )


DATA_SOURCES = {
    "bc5cdr-chem": _biobert_ner("BC5CDR-chem", CRICHTON),
    "bc5cdr-disease": _biobert_ner("BC5CDR-disease"),
    "jnlpba": _biobert_ner("JNLPBA"),
    "ncbi-disease": _biobert_ner("NCBI-disease", CRICHTON),
    "bc4chemd": _biobert_ner("BC4CHEMD"),
    "bc2gm": _biobert_ner("BC2GM"),
    "linnaeus": _biobert_ner("linnaeus"),
    "species-800": _biobert_ner("s800"),
    "i2b2-2010": _i2b2_ner("2010"),
    "i2b2-2012": _i2b2_ner("2012"),
    "i2b2-2014": _i2b2_ner("2014"),
    "hoc": DataSource(f"{BLUE}: `hoc`", "the HoC corpus's terms (Baker et al. 2016)", "BLUE/hoc"),
    "chemprot": DataSource(
        f"{BLUE}: `ChemProt`", "BioCreative VI ChemProt corpus terms", "BLUE/ChemProt"
    ),
    "gad": DataSource(f"{BIOBERT}: `REdata/GAD`", CORPUS_TERMS, "BioBERT/REdata/GAD"),
    "euadr": DataSource(f"{BIOBERT}: `REdata/euadr`", CORPUS_TERMS, "BioBERT/REdata/euadr"),
    "ddi": DataSource(
        "the DDI corpus, https://github.com/isegura/DDICorpus (`DDICorpus-2013.zip`, unzipped)",
        "CC BY-NC 4.0",
        "DDICorpus",
    ),
    "i2b2-2010-re": DataSource(
        "n2c2 2010 release, converted by BLUE's scripts to its `i2b2-2010` tsv",
        N2C2,
        "BLUE/i2b2-2010",
    ),
    "mednli": DataSource(
        "https://physionet.org/content/mednli/ (credentialed access)",
        "PhysioNet Credentialed Health Data License",
        "mednli",
    ),
    "biosses": DataSource(
        "BLUE's BIOSSES rowdata (https://github.com/ncbi-nlp/BLUE_Benchmark)",
        "BIOSSES' terms (https://tabilab.cmpe.boun.edu.tr/BIOSSES/)",
        "BLUE/biosses",
    ),
    "pubmedqa": DataSource("https://github.com/pubmedqa/pubmedqa: `data/`", "MIT", "pubmedqa/data"),
    "bioasq": DataSource(
        "http://participants-area.bioasq.org (registration): Task 7b training and golden files",
        "BioASQ's terms (registration)",
        "BioASQ",
    ),
    "ebm-pico": DataSource(
        "https://github.com/bepnye/EBM-NLP: `ebm_nlp_2_00.tar.gz`, unpacked",
        "the EBM-NLP corpus's terms (its repository)",
        "ebm_nlp_2_00",
    ),
    "gad-blurb": DataSource(
        f"{BIOBERT}: `REdata/GAD` (fold 1 only)", CORPUS_TERMS, "BioBERT/REdata/GAD"
    ),
    "chemprot-blurb": DataSource(
        f"{BLURB}: `ChemProt`", "BioCreative VI ChemProt corpus terms", "BLURB/ChemProt"
    ),
    "hoc-blurb": DataSource(
        f"{BLURB}: `HoC`", "the HoC corpus's terms (Baker et al. 2016)", "BLURB/HoC"
    ),
}


def convert_line(task: str) -> str:
    """The convert-task command for a task's download (VOCAB: the model's vocabulary dir)."""
    return (
        f"bio-roberta convert-task {task} --data {DATA_SOURCES[task].data_dir} --vocab VOCAB "
        f"--out finetune-bin/{task}"
    )


def markdown_table() -> str:
    """docs/data.md's table: one row per registry task, in registry order."""
    from bio_roberta.suites import blurb_tasks, lewis_tasks, public_tasks
    from bio_roberta.tasks.registry import TASKS

    columns = ("task", "suites", "access", "`--tasks public`", "source", "licence")
    columns += ("files in `--data`", "convert")
    rows = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    lewis, blurb, public = lewis_tasks(), blurb_tasks(), public_tasks()
    for name, spec in TASKS.items():
        source = DATA_SOURCES[name]
        suites = ", ".join(s for s, tasks in (("lewis", lewis), ("blurb", blurb)) if name in tasks)
        files = FORMAT_FILES[spec.source_format]
        files += "".join(f"; or {FORMAT_FILES[other]}" for other in spec.other_formats)
        rows.append(
            f"| `{name}` ({spec.display}) | {suites or '-'} "
            f"| {'open' if spec.public else 'licence or registration'} "
            f"| {'yes' if name in public else 'no'} "
            f"| {source.source} | {source.licence} | {files} "
            f"| `{convert_line(name)}` |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
