"""Toy copies of BLURB's 13 datasets in LinkBERT's layout, written by LinkBERT's own preprocessing.

LinkBERT's release is what its scripts/preprocess_blurb.py (github.com/michiyasunaga/LinkBERT,
commit 210bc47a412dc3df3e09339a6cd76f8eac51123b) makes of BLURB's data_generation files
(raw_data/blurb/data_generation/data/<name>/...). Its process_* functions are ported below, their
logic unchanged: paths become arguments, the printed length statistics and ``os.system("mkdir
-p")`` go, files are read whole, and process_bioasq reads its TAB-separated file with csv, not
pandas' read_csv (no dependency here; our sources hold no quote character, so both read alike).
They run over tiny synthetic source files of ours in the shape the script reads them, so the toy
folders hold what the release holds: "0" for ChemProt's and DDI's negative class, EBM-PICO's I-
word tags as B-PAR/B-INT/B-OUT, one HoC record per abstract (its sentences joined, their flags
ORed, the bare PMID as id), NER and PICO ids numbered per file from "0", BIOSSES scores as
floats, ids otherwise as the source gives them.

The sources (short biomedical sentences, record i unique so that no two splits hold the same
examples) have each dataset's labels: untyped B/I/O tags (the five NER datasets), I-PAR/I-INT/
I-OUT (EBM-NLP), CPR classes and false (ChemProt), DDI-* classes with DDI-false (DDI), 0/1 (GAD),
0-4 scores (BIOSSES), BLUE's "0_0,1_1,..." flags per sentence with <PMID>_s<n> ids (HoC: an
abstract with no hallmark among them), yes/no/maybe (PubMedQA), yes/no (BioASQ). Which header
lines BLURB's files carry is unknown beyond what the script skips (GAD's, BIOSSES's and HoC's
first line); ours are BLUE's. Their sizes are not BLURB's, so BLURB's split checks
(bio_roberta/blurb/suite.py) never take them for BLURB's split.
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterable

from bio_roberta.blurb.suite import BLURB_DATASETS
from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS

LINKBERT_FOLDERS = {dataset.task: dataset.linkbert_dir for dataset in BLURB_DATASETS}
SPLIT_FILES = ("train", "dev", "test")


# ----------------------------------------------- LinkBERT's scripts/preprocess_blurb.py, ported
# source: raw_data/blurb/data_generation/data; root: data/seqcls or data/tokcls.


def dump_jsonl(data, fpath):
    with open(fpath, "w") as outf:
        for d in data:
            print(json.dumps(d), file=outf)


def process_pubmedqa(source: Path, root: Path, fname: str) -> None:
    dname = "pubmedqa"
    if fname in ["train", "dev"]:
        data = json.loads((source / dname / "pqal_fold0" / f"{fname}_set.json").read_text())
    elif fname == "test":
        data = json.loads((source / dname / f"{fname}_set.json").read_text())
    else:
        raise AssertionError(fname)
    outs = []
    for id in data:
        obj = data[id]
        context = " ".join([c.strip() for c in obj["CONTEXTS"] if c.strip()])
        question = obj["QUESTION"].strip()
        label = obj["final_decision"].strip()
        assert label in ["yes", "no", "maybe"]
        outs.append({"id": id, "sentence1": question, "sentence2": context, "label": label})
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    dump_jsonl(outs, root / f"{dname}_hf" / f"{fname}.json")


def process_bioasq(source: Path, root: Path, fname: str) -> None:
    dname = "bioasq"
    with open(source / "BioASQ" / f"{fname}.tsv", newline="") as inf:
        rows = list(csv.reader(inf, delimiter="\t"))  # pd.read_csv(sep="\t", header=None)
    outs = []
    for row in rows:
        id = row[0].strip()
        question = row[1].strip()
        context = row[2].strip()
        label = row[3].strip()
        assert label in ["yes", "no"]
        outs.append({"id": id, "sentence1": question, "sentence2": context, "label": label})
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    dump_jsonl(outs, root / f"{dname}_hf" / f"{fname}.json")


def process_blurb_RE(source: Path, root: Path, dname: str, fname: str) -> None:
    fpath = source / dname / f"{fname}.tsv"
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    with open(root / f"{dname}_hf" / f"{fname}.json", "w") as outf:
        for i, line in enumerate(fpath.read_text().splitlines(keepends=True)):
            if i == 0 and dname == "GAD":
                continue
            line = line.strip()
            id, sent, label = line.split("\t")
            if "false" in label:
                label = "0"
            out = {"id": id, "sentence": sent, "label": label}
            print(json.dumps(out), file=outf)


def process_BIOSSES(source: Path, root: Path, fname: str) -> None:
    dname = "BIOSSES"
    fpath = source / dname / f"{fname}.tsv"
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    with open(root / f"{dname}_hf" / f"{fname}.json", "w") as outf:
        for i, line in enumerate(fpath.read_text().splitlines(keepends=True)):
            line = line.strip()
            if i == 0:
                continue
            id, sent1, sent2, label = line.split("\t")
            out = {"sentence1": sent1, "sentence2": sent2, "label": float(label), "id": id}
            print(json.dumps(out), file=outf)


def process_HOC(source: Path, root: Path, fname: str) -> None:
    dname = "HoC"
    fpath = source / dname / f"{fname}.tsv"
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    with open(root / f"{dname}_hf" / f"{fname}.json", "w") as outf:
        cur_abs_id = ""
        cur_abs = ""
        cur_label = [0] * 10
        for i, line in enumerate(fpath.read_text().splitlines(keepends=True)):
            if i == 0:
                continue
            line = line.strip()
            label, sent, id = line.split("\t")
            label = [int(elm.split("_")[1]) for elm in label.split(",")]
            if id.split("_")[0] != cur_abs_id:
                if cur_abs:
                    out = {"sentence": cur_abs, "label": cur_label, "id": cur_abs_id}
                    print(json.dumps(out), file=outf)
                    cur_abs_id = ""
                    cur_abs = ""
                    cur_label = [0] * 10
            cur_abs_id = id.split("_")[0]
            cur_abs = (cur_abs + " " + sent).strip()
            cur_label = [int(l1 | l2) for l1, l2 in zip(label, cur_label)]
        if cur_abs:
            out = {"sentence": cur_abs, "label": cur_label, "id": cur_abs_id}
            print(json.dumps(out), file=outf)


def _process_tagged(source: Path, root: Path, dname: str, fname: str, pico: bool) -> None:
    """process_blurb_NER, and process_PICO when pico (the one line in which they differ)."""
    fpath = source / dname / f"{fname}.tsv"
    outs = []
    tokens, labels = [], []
    id = 0
    for i, line in enumerate(fpath.read_text().splitlines(keepends=True)):
        line = line.strip()
        if line.startswith("-DOCSTART-"):
            continue
        if not line:
            if tokens:
                outs.append({"tokens": tokens, "ner_tags": labels, "id": str(id)})
                tokens, labels = [], []
                id += 1
            continue
        token, label = line.split("\t")
        if pico and label.startswith("I"):
            label = "B" + label[1:]
        tokens.append(token)
        labels.append(label)
    if tokens:
        outs.append({"tokens": tokens, "ner_tags": labels, "id": str(id)})
        id += 1
    (root / f"{dname}_hf").mkdir(parents=True, exist_ok=True)
    dump_jsonl(outs, root / f"{dname}_hf" / f"{fname}.json")


def process_blurb_NER(source: Path, root: Path, dname: str, fname: str) -> None:
    _process_tagged(source, root, dname, fname, pico=False)


def process_PICO(source: Path, root: Path, dname: str, fname: str) -> None:
    _process_tagged(source, root, dname, fname, pico=True)


# ----------------------------------------------- tiny synthetic sources in the shape it reads

# NER: (words before, the mention, words after); each dataset's own kind of entity
NER_SENTENCES = {
    "bc5cdr-chem": [
        ("Treatment with", "cisplatin", "caused acute renal failure"),
        ("Rats given", "lithium carbonate", "developed polyuria"),
        ("Seizures followed an overdose of", "bupropion", ""),
    ],
    "bc5cdr-disease": [
        ("Cisplatin caused", "acute renal failure", "in two patients"),
        ("Lithium induced", "nephrogenic diabetes insipidus", ""),
        ("Bupropion overdose led to", "seizures", "and tachycardia"),
    ],
    "ncbi-disease": [
        ("Germline mutations in BRCA1 cause inherited", "breast cancer", ""),
        ("Carriers of the allele developed", "ataxia telangiectasia", "early"),
        ("We studied families with", "myotonic dystrophy", ""),
    ],
    "bc2gm": [
        ("Expression of", "p53", "was reduced in tumours"),
        ("The", "insulin receptor substrate 1", "gene was cloned"),
        ("Mutations of", "BRCA2", "were screened"),
    ],
    "jnlpba": [
        ("IL-2 induced", "NF-kappa B", "in T cells"),
        ("Binding to the", "HIV-1 enhancer", "was lost"),
        ("Activated", "peripheral blood monocytes", "secreted cytokines"),
    ],
}

# EBM-NLP: words tagged I-PAR (participants), I-INT (interventions), I-OUT (outcomes) or O
PICO_SENTENCES = [
    [("Sixty", "I-PAR"), ("asthmatic", "I-PAR"), ("children", "I-PAR"), ("received", "O"),
     ("budesonide", "I-INT"), ("or", "O"), ("placebo", "I-INT"), (";", "O"), ("FEV1", "I-OUT"),
     ("improved", "O")],
    [("Adults", "I-PAR"), ("with", "I-PAR"), ("hypertension", "I-PAR"), ("took", "O"),
     ("amlodipine", "I-INT"), ("and", "O"), ("blood", "I-OUT"), ("pressure", "I-OUT"),
     ("fell", "O")],
    [("Smokers", "I-PAR"), ("given", "O"), ("nicotine", "I-INT"), ("patches", "I-INT"),
     ("reported", "O"), ("fewer", "O"), ("cravings", "I-OUT")],
]  # fmt: skip

RE_SENTENCES = {
    "chemprot-blurb": [
        "@CHEMICAL$ is a potent inhibitor of @GENE$ in human platelets",
        "@CHEMICAL$ increased the expression of @GENE$ in hepatocytes",
        "@CHEMICAL$ binds to @GENE$ with nanomolar affinity",
        "@CHEMICAL$ was given before @GENE$ levels were measured",
    ],
    "ddi": [
        "@DRUG$ may increase the plasma concentration of @DRUG$",
        "Patients taking @DRUG$ should avoid @DRUG$",
        "@DRUG$ enhances the sedative effect of @DRUG$",
        "@DRUG$ and @DRUG$ were both given in the trial",
    ],
    "gad-blurb": [
        "The @GENE$ polymorphism was associated with @DISEASE$ risk",
        "No association between @GENE$ variants and @DISEASE$ was found",
        "@GENE$ genotype predicted @DISEASE$ in the cohort",
    ],
}
# The labels of BLURB's tsv files; a repeated class weighs it as the datasets do (most ChemProt
# and DDI pairs are false).
RE_LABELS = {
    "chemprot-blurb": ["CPR:4", "false", "CPR:3", "false", "CPR:9", "CPR:6", "false", "CPR:5"],
    "ddi": ["DDI-false", "DDI-mechanism", "DDI-false", "DDI-effect", "DDI-advise", "DDI-int"],
    "gad-blurb": ["1", "0"],
}
HOC_SENTENCES = [
    "Tumour cells escaped apoptosis after treatment",
    "VEGF secretion promoted new vessel growth",
    "Telomerase activity sustained unlimited proliferation",
]
HOC_NO_HALLMARK = "The patients were recruited from three hospitals"
BIOSSES_PAIRS = [
    ("Mutations in BRAF drive melanoma growth", "BRAF mutations promote melanoma"),
    ("The protein localises to the nucleus", "Cancer cells divide quickly"),
    ("KRAS is frequently mutated in lung cancer", "Lung tumours often carry KRAS mutations"),
]
QUESTIONS = {
    "pubmedqa": (
        ["yes", "no", "maybe"],
        [
            ("Does aspirin reduce the risk of colorectal cancer",
             "In 2,000 adults aspirin use was followed by fewer colorectal tumours"),
            ("Is obesity a risk factor for asthma in children",
             "Obese children had no more asthma than others after adjustment"),
            ("Can statins prevent dementia",
             "Statin users showed a weak, not significant, lower rate of dementia"),
        ],
    ),
    "bioasq": (
        ["yes", "no"],
        [
            ("Is Apolipoprotein E associated with Alzheimer's disease",
             "The APOE e4 allele is the strongest genetic risk factor for Alzheimer's disease"),
            ("Is insulin produced by the liver",
             "Insulin is secreted by the beta cells of the pancreatic islets"),
        ],
    ),
}  # fmt: skip


def hoc_flags(i: int) -> list[int]:
    """The ten hallmark flags of HoC abstract i: most name one hallmark, some two, some none."""
    if i % 7 == 6:
        return [0] * len(HOC_HALLMARKS)
    hallmarks = {i % len(HOC_HALLMARKS)}
    if i % 3 == 2:
        hallmarks.add((i + 3) % len(HOC_HALLMARKS))
    return [int(j in hallmarks) for j in range(len(HOC_HALLMARKS))]


def _blue_flags(flags: list[int]) -> str:
    return ",".join(f"{j}_{flag}" for j, flag in enumerate(flags))


def _tagged_lines(task: str, i: int) -> list[str]:
    """Sentence i as `token<TAB>tag` lines and the blank line that ends it."""
    if task == "ebm-pico":
        pairs = [(f"Trial{i}", "O"), (":", "O"), *PICO_SENTENCES[i % len(PICO_SENTENCES)]]
    else:
        before, mention, after = NER_SENTENCES[task][i % len(NER_SENTENCES[task])]
        pairs = [(f"Case{i}", "O"), (":", "O")]
        for words, tag in ((before, "O"), (mention, "B"), (after, "O")):
            pairs += [(w, "I" if tag == "B" and k else tag) for k, w in enumerate(words.split())]
        pairs.append((".", "O"))
    return [f"{token}\t{tag}" for token, tag in pairs] + [""]


def _source_lines(task: str, i: int) -> list[str]:
    """The lines of BLURB's tsv that preprocess_blurb.py makes record i of (HoC: abstract i,
    PMID 100 + i, its sentences with theirs flags; the second of two names no hallmark)."""
    if task == "hoc-blurb":
        pmid, first = 100 + i, HOC_SENTENCES[i % len(HOC_SENTENCES)]
        lines = [f"{_blue_flags(hoc_flags(i))}\t{first} (case {i}).\t{pmid}_s0"]
        if i % 2:
            no_flags = _blue_flags([0] * len(HOC_HALLMARKS))
            lines.append(f"{no_flags}\t{HOC_NO_HALLMARK} (case {i}).\t{pmid}_s1")
        return lines
    if task in RE_SENTENCES:
        sentences, labels = RE_SENTENCES[task], RE_LABELS[task]
        return [f"{i}\t{sentences[i % len(sentences)]} (case {i}).\t{labels[i % len(labels)]}"]
    if task == "biosses":
        first, second = BIOSSES_PAIRS[i % len(BIOSSES_PAIRS)]
        return [f"{i}\t{first} ({i}).\t{second}.\t{round(i % 5 * 0.8, 1)}"]  # 0-4, 5 annotators
    if task == "bioasq":
        labels, pairs = QUESTIONS[task]
        question, context = pairs[i % len(pairs)]
        return [f"{i}\t{question} (case {i})?\t{context}.\t{labels[i % len(labels)]}"]
    return _tagged_lines(task, i)


# The first line of the tsv files whose first line the script skips (BLUE's headers).
HEADERS = {
    "gad-blurb": "index\tsentence\tlabel",
    "biosses": "index\tsentence1\tsentence2\tscore",
    "hoc-blurb": "labels\tsentence\tindex",
}


def _pubmedqa_source(numbers: range) -> dict:
    """PubMedQA's {PMID: {"QUESTION", "CONTEXTS", "final_decision", ...}} of records numbers."""
    labels, pairs = QUESTIONS["pubmedqa"]
    source = {}
    for i in numbers:
        question, context = pairs[i % len(pairs)]
        source[str(i)] = {
            "QUESTION": f"{question} (case {i})?",
            "CONTEXTS": [f"{context}.", " ", f"Case {i}."],
            "final_decision": labels[i % len(labels)],
        }
    return source


def write_sources(source: Path, task: str, sizes=(6, 2, 3)) -> None:
    """BLURB's data_generation files of one dataset under source, as preprocess_blurb.py reads
    them; sizes count the records it makes of them (HoC: abstracts), numbered on across splits."""
    dname = Path(LINKBERT_FOLDERS[task]).name.removesuffix("_hf")
    start = 0
    for fname, size in zip(SPLIT_FILES, sizes):
        numbers = range(start, start + size)
        start += size
        if task == "pubmedqa":
            folder = source / dname / ("pqal_fold0" if fname != "test" else "")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{fname}_set.json").write_text(json.dumps(_pubmedqa_source(numbers)))
            continue
        folder = source / ("BioASQ" if task == "bioasq" else dname)
        folder.mkdir(parents=True, exist_ok=True)
        lines = [HEADERS[task]] if task in HEADERS else []
        lines += [line for i in numbers for line in _source_lines(task, i)]
        (folder / f"{fname}.tsv").write_text("".join(f"{line}\n" for line in lines))


def preprocess(source: Path, root: Path, task: str) -> Path:
    """preprocess_blurb.py's calls for one dataset: <root>/<linkbert_dir> from source."""
    kind_root = root / Path(LINKBERT_FOLDERS[task]).parent
    dname = Path(LINKBERT_FOLDERS[task]).name.removesuffix("_hf")
    for fname in SPLIT_FILES:
        if task == "pubmedqa":
            process_pubmedqa(source, kind_root, fname)
        elif task == "bioasq":
            process_bioasq(source, kind_root, fname)
        elif task in RE_SENTENCES:
            process_blurb_RE(source, kind_root, dname, fname)
        elif task == "biosses":
            process_BIOSSES(source, kind_root, fname)
        elif task == "hoc-blurb":
            process_HOC(source, kind_root, fname)
        elif task == "ebm-pico":
            process_PICO(source, kind_root, dname, fname)
        else:
            process_blurb_NER(source, kind_root, dname, fname)
    return root / LINKBERT_FOLDERS[task]


# ----------------------------------------------- the toy folders


def write_linkbert(root: Path, task: str, sizes=(6, 2, 3)) -> Path:
    """A tiny copy of one BLURB dataset in LinkBERT's layout under root, made by the ported
    preprocess_blurb.py from synthetic sources; returns its folder."""
    if task not in LINKBERT_FOLDERS:
        raise ValueError(f"{task}: not a BLURB dataset; known: {', '.join(LINKBERT_FOLDERS)}")
    with tempfile.TemporaryDirectory() as source:
        write_sources(Path(source), task, sizes)
        return preprocess(Path(source), root, task)


def linkbert_records(task: str, sizes=(6, 2, 3)) -> dict[str, list[dict]]:
    """The records write_linkbert writes, by file stem (train, dev, test)."""
    with tempfile.TemporaryDirectory() as root:
        folder = write_linkbert(Path(root), task, sizes)
        return {
            stem: [json.loads(line) for line in (folder / f"{stem}.json").read_text().splitlines()]
            for stem in SPLIT_FILES
        }


def source_label_counts(task: str, sizes=(6, 2, 3)) -> dict[str, Counter]:
    """file stem -> the labels (tags) in BLURB's source files of a relation or tagging dataset
    that write_linkbert makes its toy of, counted: what reading LinkBERT's files must give back."""
    counts = {}
    with tempfile.TemporaryDirectory() as source:
        write_sources(Path(source), task, sizes)
        for path in Path(source).glob("*/*.tsv"):
            lines = path.read_text().splitlines()[1 if task in HEADERS else 0 :]
            column = -1 if task in RE_SENTENCES else 1
            counts[path.stem] = Counter(line.split("\t")[column] for line in lines if line)
    return counts


def write_blurb_toy(root: Path, sizes=(6, 2, 3), leave_out: Iterable[str] = ()) -> list[str]:
    """Every BLURB dataset but those left out (registry task names) under root in LinkBERT's
    layout; returns the tasks written, BLURB_DATASETS order."""
    leave_out = set(leave_out)
    unknown = leave_out - set(LINKBERT_FOLDERS)
    if unknown:
        raise ValueError(f"not BLURB datasets: {', '.join(sorted(unknown))}")
    written = [task for task in LINKBERT_FOLDERS if task not in leave_out]
    for task in written:
        write_linkbert(root, task, sizes)
    return written


def toy_text(root: Path) -> str:
    """The text of every record under root's LinkBERT folders, one line each (a corpus to learn a
    vocabulary from that covers the toy files' words)."""
    lines = []
    for path in sorted(root.glob("*/*_hf/*.json")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            fields = [" ".join(record.get("tokens", []))]
            fields += [record.get(key) or "" for key in ("sentence", "sentence1", "sentence2")]
            lines.append(" ".join(filter(None, fields)))
    return "\n".join(lines) + "\n"
