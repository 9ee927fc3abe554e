"""PubMed Central open-access full text (.nxml files and bulk .tar.gz packages) -> text shards.

A document is one article: its title, its abstract(s), then every non-empty body paragraph. The
paragraphs are those pubmed_parser.parse_pubmed_paragraph(all_paragraph=True) extracts, the
paper's choice, and the ids are its parse_article_meta's. Its paragraph selection (//body//p, each
by its stringify_children, after remove_namespace) is applied here to the tree parsed once: called
itself, it parses the file a second time, keeping two trees of the article in memory, and without
huge_tree, so a paragraph over libxml2's 10 MB text limit failed there as "XMLSyntaxError: Start
tag expected" (its reader then parses the path as if it were XML).

Title and abstract are read here with lxml (whitespace collapsed) rather than through
parse_pubmed_xml: pubmed_parser 0.5.1 raises KeyError('year') there for every article without a
"ppub"/"collection" pub-date (JATS 1.2+ writes date-type/publication-format instead), which would
drop whole valid articles over a date we do not use. The id is "PMC" + the article's PMC id, or
the file name without .nxml when the article has none.

Each article is first parsed with lxml from its bytes, so malformed XML (or invalid UTF-8) is
reported with its line and column (parsed from a file name, lxml reports invalid UTF-8 as an
OSError without a position); pubmed_parser would otherwise hide the position. An article that
fails is counted (`unparseable_article`) and reported with the file (and tar member) and the
reason; the run goes on.

Packages are read as a stream (tarfile "r|*"), never extracted as a whole: only regular members
ending in .nxml are read, each copied to a private temporary file with a name of our choosing
(pubmed_parser wants a path). Members with an absolute path, a '..' component, links and device
files are refused and reported as unsafe; other members (PDFs, figures) are counted and ignored.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, Sequence

from lxml import etree
from pubmed_parser.pubmed_oa_parser import parse_article_meta
from pubmed_parser.utils import remove_namespace, stringify_children

from preprocess.input_log import InputLog, printable_name
from preprocess.parse_stage import build_text_shards
from preprocess.text_shards import Document, Record, ShardOptions, expand_inputs

SOURCE = "pmc"
INPUT_PATTERNS = ("*.nxml", "*.tar.gz", "*.tgz", "*.tar")
ARTICLE_SUFFIX = ".nxml"
# Articles are parsed whole in memory (peak about 6x their size, docs/parse.md); a larger one
# (a 1 GB member of a 1 MB package) is skipped and reported, never read.
DEFAULT_MAX_ARTICLE_MB = 256.0


def unsafe_member_reason(member: tarfile.TarInfo) -> str | None:
    """Why a tar member must not be read, or None for a safe regular file or directory."""
    name = PurePosixPath(member.name)
    if name.is_absolute() or member.name.startswith(("/", "\\")):
        return "absolute path"
    if ".." in name.parts:
        return "'..' in path"
    if member.issym() or member.islnk():
        return "link"
    if not (member.isfile() or member.isdir()):
        return "device, fifo or other special member"
    return None


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def read_article(path: Path, name: str, log: InputLog) -> Document | None:
    """One .nxml article (at `path`, reported as `name`) as a document; None when it fails."""
    name, raw_name = printable_name(name), name
    try:
        # huge_tree lifts libxml2's 10 MB text-node and depth limits (a real long paragraph); it is
        # safe here: entities are never expanded (no amplification), nothing is fetched, and the
        # article's size is bounded by --max-article-mb.
        article = etree.fromstring(
            path.read_bytes(),
            etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True),
        )
    except etree.XMLSyntaxError as error:
        line, column = error.position
        log.skip("unparseable_article")
        log.problem(f"{name}: line {line}, column {column}", f"malformed XML: {error.msg}")
        return None
    try:
        remove_namespace(article)
        ids = parse_article_meta(article)
        paragraphs = [stringify_children(paragraph) for paragraph in article.xpath("//body//p")]
    except Exception as error:  # pubmed_parser raises many kinds on odd articles; each is reported
        log.skip("unparseable_article")
        log.problem(name, f"pubmed_parser failed: {type(error).__name__}: {error}")
        return None
    title = article.find(".//title-group/article-title")
    texts = [_text(title) if title is not None else ""]
    texts += [_text(abstract) for abstract in article.iterfind(".//abstract")]
    texts += paragraphs
    empty_paragraphs = sum(1 for paragraph in paragraphs if not paragraph.strip())
    if empty_paragraphs:
        log.other["empty_paragraphs"] += empty_paragraphs
    pmc_id = (ids.get("pmc") or "").strip()
    if not pmc_id and name != raw_name:
        log.skip("file_name_not_utf8")
        log.problem(
            name,
            "the article has no PMC id and its file name, its id then, is not valid UTF-8: "
            "article skipped; rename the file",
        )
        return None
    doc_id = f"PMC{pmc_id}" if pmc_id else PurePosixPath(name).name.removesuffix(ARTICLE_SUFFIX)
    return Document(doc_id, tuple(text for text in texts if text.strip()))


def too_large(size: int, max_article_mb: float, where: str, log: InputLog) -> bool:
    """Whether an article of `size` bytes is over the limit; if so it is counted and reported."""
    if size <= max_article_mb * (1 << 20):
        return False
    log.skip("article_too_large")
    log.problem(
        where,
        f"article of {size:,} bytes is over --max-article-mb {max_article_mb:g}: skipped "
        "(raise the limit to read it)",
    )
    return True


def _iter_package(path: Path, log: InputLog, max_article_mb: float) -> Iterator[Document]:
    scratch = Path(tempfile.mkdtemp(prefix="bio-roberta-pmc-"))
    article_path = scratch / f"article{ARTICLE_SUFFIX}"
    where = "package header"
    try:
        with tarfile.open(path, mode="r|*") as package:
            for member_number, member in enumerate(package, 1):
                where = f"member {member_number} {printable_name(member.name)!r}"
                reason = unsafe_member_reason(member)
                if reason:
                    log.other["unsafe_members"] += 1
                    log.problem(where, f"unsafe tar member refused: {reason}")
                    continue
                if member.isdir():
                    continue
                if not member.name.endswith(ARTICLE_SUFFIX):
                    log.other["other_members"] += 1
                    continue
                if too_large(member.size, max_article_mb, where, log):
                    continue
                source = package.extractfile(member)
                with open(article_path, "wb") as article:
                    shutil.copyfileobj(source, article)
                document = read_article(article_path, f"{path.name}:{member.name}", log)
                if document is not None:
                    yield document
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        log.problem(where, f"corrupt package: {type(error).__name__}: {error}", fatal=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def iter_pmc_records(
    path: str | os.PathLike,
    log: InputLog | None = None,
    max_article_mb: float = DEFAULT_MAX_ARTICLE_MB,
) -> Iterator[Record]:
    """Documents of one .nxml file or one tar package of them, in package order; articles over
    `max_article_mb` are skipped (`article_too_large`) and reported."""
    path = Path(path)
    log = log if log is not None else InputLog(str(path))
    if path.suffix in (ARTICLE_SUFFIX, ".xml"):
        if too_large(path.stat().st_size, max_article_mb, path.name, log):
            return
        document = read_article(path, path.name, log)
        if document is not None:
            yield document
    else:
        yield from _iter_package(path, log, max_article_mb)


def parse_pmc(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    options: ShardOptions = ShardOptions(),
    overwrite: bool = False,
    max_article_mb: float = DEFAULT_MAX_ARTICLE_MB,
) -> dict[str, Any]:
    """PMC .nxml files and packages (or directories of them) -> text shards; returns the
    manifest."""
    if max_article_mb <= 0:
        raise ValueError(f"--max-article-mb must be positive, got {max_article_mb:g}")
    return build_text_shards(
        SOURCE,
        iter_pmc_records,
        expand_inputs(inputs, INPUT_PATTERNS),
        out_dir,
        options,
        {"max_article_mb": max_article_mb},
        overwrite=overwrite,
    )
