"""Where each registry task's files come from, under which terms, and the layout its reader takes
in `convert-task --data`: the facts docs/data.md's table is generated from
(`python -m bio_roberta.report.data_sources` prints it; tests/test_data_doc.py keeps the two equal
and this table in step with the registry)."""

from __future__ import annotations

from dataclasses import dataclass

BIOBERT = "BioBERT's benchmark datasets (linked from https://github.com/dmis-lab/biobert)"
BLUE = "BLUE's `bert_data` (https://github.com/ncbi-nlp/BLUE_Benchmark, releases)"
N2C2 = "n2c2 / i2b2 data use agreement (https://portal.dbmi.hms.harvard.edu), credentialed"
CORPUS_TERMS = "the original corpus's terms (research use); BioBERT redistributes it"
CRICHTON = "CC BY 4.0 (Crichton et al.'s copy, the upstream of BioBERT's)"
BLURB = "BLURB's data generation (https://microsoft.github.io/BLURB/submit.html)"


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
    from bio_roberta.blurb.suites import blurb_tasks, lewis_tasks, public_tasks
    from bio_roberta.readers import FORMAT_MODULES
    from bio_roberta.tasks.registry import TASKS

    columns = ("task", "suites", "access", "`--tasks public`", "source", "licence")
    columns += ("files in `--data`", "convert")
    rows = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    lewis, blurb, public = lewis_tasks(), blurb_tasks(), public_tasks()
    for name, spec in TASKS.items():
        source = DATA_SOURCES[name]
        suites = ", ".join(s for s, tasks in (("lewis", lewis), ("blurb", blurb)) if name in tasks)
        files = FORMAT_MODULES[spec.source_format].LAYOUT
        files += "".join(f"; or {FORMAT_MODULES[other].LAYOUT}" for other in spec.other_formats)
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
