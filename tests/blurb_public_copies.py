"""LinkBERT-layout copies of BLURB's datasets made from public files at named commits, as the tests
of BLURB's split certification read them (bio_roberta/blurb/split_evidence.py records what was
measured on them).

Each folder is either a public copy of LinkBERT's release, read as it is, or made from the public
source files by BLURB's own data generation (tests/blurb_data_generation.py) and LinkBERT's
preprocess_blurb.py (tests/blurb_toy.py), both ported: no test copy of a release is written from
a description of it. The public repositories are read from git clones (or mirrors) under
$BIO_ROBERTA_PUBLIC_GIT (default ../.mirror), as <owner>+<name>/repo, <owner>+<name> or
<owner>/<name>; a test needing one that is absent is skipped, like one needing ../shared/data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from blurb_data_generation import (
    prepare_ddi_lines,
    prepare_jnlpba_lines,
    preprocess_gad_corpus,
    preprocess_ner_data,
)
from blurb_toy import LINKBERT_FOLDERS, process_blurb_NER, process_blurb_RE
from conftest import REPO_ROOT, shared_data_path

PUBLIC_GIT = Path(os.environ.get("BIO_ROBERTA_PUBLIC_GIT", REPO_ROOT.parent / ".mirror"))
LINKBERT_FILES = {"train": "train.json", "dev": "dev.json", "test": "test.json"}


@dataclass(frozen=True)
class PublicRepo:
    name: str  # owner/name on GitHub
    commit: str

    def git_dir(self) -> Path:
        """Its clone under PUBLIC_GIT; the calling test skips without one holding the commit."""
        flat = self.name.replace("/", "+")
        for folder in (PUBLIC_GIT / flat / "repo", PUBLIC_GIT / flat, PUBLIC_GIT / self.name):
            if folder.is_dir() and _git(folder, "cat-file", "-e", f"{self.commit}^{{commit}}"):
                return folder
        pytest.skip(f"no git clone of {self.name} holding {self.commit[:7]} under {PUBLIC_GIT}")

    def read(self, path: str) -> bytes:
        """The file at path in the commit; skips when the clone lacks its content (a large file
        a mirror left out)."""
        blob = f"{self.commit}:{path}"
        folder = self.git_dir()
        if not _git(folder, "cat-file", "-e", blob):
            pytest.skip(f"{self.name} {blob}: content not in the clone at {folder}")
        return subprocess.run(
            ["git", "-C", str(folder), "cat-file", "blob", blob], capture_output=True, check=True
        ).stdout

    def listed_blob(self, path: str) -> str:
        """The git blob id the commit's tree lists for path (git's SHA-1 of the file's bytes,
        known from the tree even where a mirror left the content out)."""
        tree = subprocess.run(
            ["git", "-C", str(self.git_dir()), "ls-tree", self.commit, path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert tree, f"{self.name} {self.commit[:7]} lists no {path}"
        return tree[2]


def _git(folder: Path, *args: str) -> bool:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True).returncode == 0


def git_blob_id(data: bytes) -> str:
    """git's blob id of bytes: what `git hash-object` prints for a file holding them."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# A copy of LinkBERT's release (HoC, BioASQ, PubMedQA, BC5CDR-disease, NCBI-disease, BC5CDR-chem
# whole; BC2GM and DDI without the train.json content); NLI_as_Indirect_Supervision's README says
# its data/*_hf folders are LinkBERT's; Crichton et al.'s NER files (BLURB's NER source); the
# JNLPBA shared task's files.
BIOMEDDATA = PublicRepo("robert1ridley/BioMedData", "f346e04f05d14735ff9b7ae10916687c455e1e7c")
NLI_AS_INDIRECT = PublicRepo(
    "luka-group/NLI_as_Indirect_Supervision", "276deb8a0defc1d89f418dacf60c60de77e4a500"
)
CRICHTON = PublicRepo(
    "cambridgeltl/MTL-Bioinformatics-2016", "df0df02fae6dbb87d88ffcf323b9096528f06f84"
)
JNLPBA_TASK = PublicRepo("spyysalo/jnlpba", "4455122de861c6e448e2e8c7f19ef8f49dbc32b2")
# a public copy of BLURB's data_generation/preprocessor.py (tests/blurb_data_generation.py ports it)
BLURB_PREPROCESSOR = PublicRepo("leonweber/biomuppet", "f93526f17a5cd89cbfe7882289a28656b0bd011e")
# Crichton's folder of each NER dataset BLURB builds from it (preprocessor.py main())
CRICHTON_NER = {
    "bc5cdr-chem": "data/BC5CDR-chem-IOB",
    "bc5cdr-disease": "data/BC5CDR-disease-IOB",
    "ncbi-disease": "data/NCBI-disease-IOB",
    "bc2gm": "data/BC2GM-IOB",
}
CRICHTON_FILES = {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"}
DDI_TRAIN_XML = "re/DDI-2013/DDICorpus/Train"
DDI_TEST_XML = "re/DDI-2013/DDICorpus/Test/Test for DDI Extraction task"


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").splitlines(keepends=True)


def _write_source(source: Path, dname: str, split: str, lines: list[str]) -> None:
    folder = source / dname
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")


def _dname(task: str) -> str:
    return Path(LINKBERT_FOLDERS[task]).name.removesuffix("_hf")


def linkbert_ner_from_crichton(root: Path, task: str) -> Path:
    """root/tokcls/<name>_hf made from Crichton's <name>-IOB files by BLURB's preprocess_ner_data
    and LinkBERT's process_blurb_NER."""
    source = root / "data_generation"
    for split, name in CRICHTON_FILES.items():
        lines = _lines(CRICHTON.read(f"{CRICHTON_NER[task]}/{name}"))
        _write_source(source, _dname(task), split, preprocess_ner_data(lines))
        process_blurb_NER(source, root / "tokcls", _dname(task), split)
    return root / LINKBERT_FOLDERS[task]


def jnlpba_dev_and_test(root: Path) -> Path:
    """root/tokcls/JNLPBA_hf/{dev,test}.json: dev from Crichton's JNLPBA/devel.tsv (BLURB's
    prepare_jnlpba_data cuts Genia4ERtask2.iob2 at line JNLPBA_SPLIT_LINE, "the same train/dev
    split as MTL", i.e. Crichton's), test from the shared task's Genia4EReval2.iob2, each by
    BLURB's rule and LinkBERT's process_blurb_NER. No train: Genia4ERtask2.iob2 is not at hand
    (tests/test_blurb_public_copies.py checks the cut, JNLPBA_SPLIT_LINE, is the preprocessor's)."""
    source = root / "data_generation"
    dev = _lines(CRICHTON.read("data/JNLPBA/devel.tsv"))
    test = prepare_jnlpba_lines(_lines(JNLPBA_TASK.read("original-data/test/Genia4EReval2.iob2")))
    for split, lines in (("dev", dev), ("test", test)):
        _write_source(source, "JNLPBA", split, preprocess_ner_data(lines))
        process_blurb_NER(source, root / "tokcls", "JNLPBA", split)
    return root / LINKBERT_FOLDERS["jnlpba"]


def gad_from_biobert_fold1(root: Path) -> Path:
    """root/seqcls/GAD_hf from BioBERT's GAD fold 1 (../shared/data re/GAD/1) by BLURB's
    preprocess_GAD_corpus and LinkBERT's process_blurb_RE."""
    fold = shared_data_path("re/GAD/1")
    tsv = preprocess_gad_corpus(
        _lines((fold / "train.tsv").read_bytes()), _lines((fold / "test.tsv").read_bytes())
    )
    source = root / "data_generation"
    for split, lines in tsv.items():
        _write_source(source, "GAD", split, lines)
        process_blurb_RE(source, root / "seqcls", "GAD", split)
    return root / LINKBERT_FOLDERS["gad-blurb"]


def ddi_dev_documents(dev: bytes) -> set[str]:
    """The documents of a DDI dev.json's pairs (an id DDI-DrugBank.d236.s29.p0 is of
    DDI-DrugBank.d236)."""
    return {json.loads(line)["id"].rsplit(".", 2)[0] for line in dev.decode().splitlines()}


def ddi_train_by_rule(dev_documents: set[str]) -> list[str]:
    """BLURB's DDI train by its rule: the pairs of the DDI-2013 Train files (../shared/data) whose
    document is not one of BLURB's dev documents (BLURB's 624/90 file lists share out the 714
    Train files: 25,296 + 2,496 pairs); prepare_DDI_data's lines, the files in path order."""
    files = sorted(shared_data_path(DDI_TRAIN_XML).glob("*/*.xml"))
    train = [f for f in files if ET.parse(f).getroot().get("id") not in dev_documents]
    return prepare_ddi_lines(train)


def ddi_test_by_rule(root: Path, documents: list[str]) -> Path:
    """root/seqcls/DDI_hf/test.json made by BLURB's prepare_DDI_data from the DDI-2013 Test XML
    (../shared/data) of these documents, in this order (the order of BLURB's test_files.tsv,
    which is not public), and LinkBERT's process_blurb_RE."""
    xml = shared_data_path(DDI_TEST_XML).glob("*/*.xml")
    files = {ET.parse(path).getroot().get("id"): path for path in xml}
    lines = prepare_ddi_lines(files[document] for document in documents)
    _write_source(root / "data_generation", "DDI", "test", lines)
    process_blurb_RE(root / "data_generation", root / "seqcls", "DDI", "test")
    return root / LINKBERT_FOLDERS["ddi"] / "test.json"


def copy_of(repo: PublicRepo, root: Path, task: str, files=LINKBERT_FILES, base=None) -> Path:
    """root/<linkbert_dir> holding the files of repo's copy of it (in base, default
    data/<linkbert_dir>), as they are."""
    folder = root / LINKBERT_FOLDERS[task]
    folder.mkdir(parents=True)
    for name in files.values():
        (folder / name).write_bytes(repo.read(f"{base or 'data/' + LINKBERT_FOLDERS[task]}/{name}"))
    return folder


def shared_linkbert(root: Path, task: str) -> Path:
    """root/<linkbert_dir>, a copy of ../shared/data's LinkBERT folder (NCBI, BC5CDR-chem)."""
    folder = root / LINKBERT_FOLDERS[task]
    shutil.copytree(shared_data_path("blurb_linkbert", LINKBERT_FOLDERS[task]), folder)
    return folder


def bc2gm_release(root: Path) -> Path:
    """root/tokcls/BC2GM_hf: dev.json and test.json of BioMedData's copy of the release, train.json
    made by BLURB's rule from Crichton's BC2GM-IOB/train.tsv (linkbert_ner_from_crichton)."""
    folder = copy_of(BIOMEDDATA, root, "bc2gm", {"dev": "dev.json", "test": "test.json"})
    rule = linkbert_ner_from_crichton(root / "rule", "bc2gm")
    shutil.copy(rule / "train.json", folder / "train.json")
    return folder


def ddi_release(root: Path) -> Path:
    """root/seqcls/DDI_hf: dev.json and test.json of BioMedData's copy of the release, train.json
    made by BLURB's rule from the corpus XML (ddi_train_by_rule) and LinkBERT's
    process_blurb_RE."""
    folder = copy_of(BIOMEDDATA, root, "ddi", {"dev": "dev.json", "test": "test.json"})
    lines = ddi_train_by_rule(ddi_dev_documents((folder / "dev.json").read_bytes()))
    _write_source(root / "data_generation", "DDI", "train", lines)
    process_blurb_RE(root / "data_generation", root / "seqcls", "DDI", "train")
    return folder


# A full set of LinkBERT-layout folders for the datasets whose public copies exist: each a copy
# as it is, but BC2GM's and DDI's train, made by BLURB's rule.
RELEASE_FOLDERS = {
    "ncbi-disease": shared_linkbert,
    "bc5cdr-chem": shared_linkbert,
    "bc5cdr-disease": lambda root, task: copy_of(BIOMEDDATA, root, task),
    "bc2gm": lambda root, _task: bc2gm_release(root),
    "ddi": lambda root, _task: ddi_release(root),
    "gad-blurb": lambda root, task: copy_of(NLI_AS_INDIRECT, root, task, base="data/GAD_hf"),
    "hoc-blurb": lambda root, task: copy_of(BIOMEDDATA, root, task),
    "pubmedqa": lambda root, task: copy_of(BIOMEDDATA, root, task),
    "bioasq": lambda root, task: copy_of(BIOMEDDATA, root, task),
}


def swap_train_and_test(folder: Path, count: int = 2) -> None:
    """Swap the first `count` records of train.json and test.json: same sizes, other splits."""
    train = (folder / "train.json").read_text().splitlines()
    test = (folder / "test.json").read_text().splitlines()
    (folder / "train.json").write_text("\n".join(test[:count] + train[count:]) + "\n")
    (folder / "test.json").write_text("\n".join(train[:count] + test[count:]) + "\n")
