"""Toy copies of BLURB's 13 datasets in LinkBERT's layout (its scripts/preprocess_blurb.py, as
bio_roberta/readers/formats/linkbert_hf.py reads it): <root>/<BlurbDataset.linkbert_dir>/
{train,dev,test}.json, JSON lines, one example a line.

Synthetic, written from that layout's spec at tiny size, not copied from BLURB's files: short
biomedical sentences, each record i unique (so no two splits hold the same examples), with the
labels each dataset has: untyped B/I/O tags (the five NER datasets), EBM-NLP's I-PAR/I-INT/I-OUT
word tags (PICO), ChemProt's CPR classes and DDI's DDI-* classes (false the most common), GAD's
0/1, BIOSSES's similarity scores 0-4, HoC's ten 0/1 hallmark flags per sentence (BLUE's class
order, ids <PMID>_s<n>, sentences of no hallmark among them), PubMedQA's yes/no/maybe and BioASQ's
yes/no. Their sizes are not BLURB's, so BLURB's split checks (bio_roberta/blurb/suite.py) never
take them for BLURB's split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from bio_roberta.blurb.suite import BLURB_DATASETS
from bio_roberta.tasks.registry import HOC_HALLMARKS

LINKBERT_FOLDERS = {dataset.task: dataset.linkbert_dir for dataset in BLURB_DATASETS}
SPLIT_FILES = ("train", "dev", "test")

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

PAIR_SENTENCES = {
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
    "hoc-blurb": [
        "Tumour cells escaped apoptosis after treatment",
        "VEGF secretion promoted new vessel growth",
        "The patients were recruited from three hospitals",
        "Telomerase activity sustained unlimited proliferation",
    ],
}
# A repeated class weighs it as the datasets do: most ChemProt and DDI pairs are false.
PAIR_LABELS = {
    "chemprot-blurb": ["CPR:4", "false", "CPR:3", "false", "CPR:9", "CPR:6", "false", "CPR:5"],
    "ddi": ["DDI-false", "DDI-mechanism", "DDI-false", "DDI-effect", "DDI-advise", "DDI-int"],
    "gad-blurb": ["1", "0"],
}
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
    """The ten hallmark flags of HoC sentence i: most name one hallmark, some two, some none."""
    if i % 7 == 6:
        return [0] * len(HOC_HALLMARKS)
    hallmarks = {i % len(HOC_HALLMARKS)}
    if i % 3 == 2:
        hallmarks.add((i + 3) % len(HOC_HALLMARKS))
    return [int(j in hallmarks) for j in range(len(HOC_HALLMARKS))]


def linkbert_record(task: str, i: int) -> dict:
    """Record i of a BLURB dataset in LinkBERT's layout (i makes it unique and picks its labels)."""
    if task in NER_SENTENCES:
        before, mention, after = NER_SENTENCES[task][i % len(NER_SENTENCES[task])]
        tokens, tags = [f"Case{i}", ":"], ["O", "O"]
        for words, tag in ((before, "O"), (mention, "B"), (after, "O")):
            for k, word in enumerate(words.split()):
                tokens.append(word)
                tags.append("I" if tag == "B" and k else tag)
        return {"tokens": [*tokens, "."], "ner_tags": [*tags, "O"], "id": str(i)}
    if task == "ebm-pico":
        words, tags = zip(*PICO_SENTENCES[i % len(PICO_SENTENCES)])
        return {"tokens": [f"Trial{i}", ":", *words], "ner_tags": ["O", "O", *tags], "id": str(i)}
    if task == "hoc-blurb":
        sentences = PAIR_SENTENCES[task]
        text = f"{sentences[i % len(sentences)]} (case {i})."
        return {"sentence": text, "label": hoc_flags(i), "id": f"{100 + i // 2}_s{i % 2}"}
    if task in PAIR_SENTENCES:
        sentences, labels = PAIR_SENTENCES[task], PAIR_LABELS[task]
        text = f"{sentences[i % len(sentences)]} (case {i})."
        return {"sentence": text, "label": labels[i % len(labels)], "id": str(i)}
    if task == "biosses":
        first, second = BIOSSES_PAIRS[i % len(BIOSSES_PAIRS)]
        return {
            "sentence1": f"{first} ({i}).",
            "sentence2": f"{second}.",
            "label": round(i % 5 * 0.8, 1),  # the mean of five annotators, 0-4
            "id": i,
        }
    if task in QUESTIONS:
        labels, pairs = QUESTIONS[task]
        question, context = pairs[i % len(pairs)]
        return {
            "sentence1": f"{question} (case {i})?",
            "sentence2": f"{context}.",
            "label": labels[i % len(labels)],
            "id": i,
        }
    raise ValueError(f"{task}: not a BLURB dataset; known: {', '.join(LINKBERT_FOLDERS)}")


def write_linkbert(root: Path, task: str, sizes=(6, 2, 3), start=0) -> Path:
    """A tiny copy of one BLURB dataset in LinkBERT's layout under root; returns its folder.
    Records are numbered on from start across train, dev and test."""
    folder = root / LINKBERT_FOLDERS[task]
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in zip(SPLIT_FILES, sizes):
        records = [linkbert_record(task, start + i) for i in range(size)]
        (folder / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in records))
        start += size
    return folder


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
