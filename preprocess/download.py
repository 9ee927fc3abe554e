"""Download the PubMed baseline and PMC open-access bulk packages: resumable, verified, retried.

A file is fetched into NAME.part, resumed with an HTTP Range request after an interruption, and
renamed to NAME only once verified: against the NAME.md5 NCBI publishes beside each PubMed file
("MD5(pubmed24n0001.xml.gz)= <hex>"), or, where no checksum is published (PMC oa_bulk), by reading
the gzip stream to its end (its CRC and length). A file that fails verification is reported,
deleted and fetched again; after `retries` attempts the file is recorded as failed and the run
goes on with the next one, ending with a non-zero status. A re-run skips verified files.
"""

from __future__ import annotations

import gzip
import hashlib
import html.parser
import http.client
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import (
    atomic_write_json,
    atomic_write_text,
    environment_record,
    file_record,
)

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
USER_AGENT = "bio-roberta-download/0.1 (research corpus download)"


@dataclass(frozen=True)
class Source:
    url: str  # directory listing
    pattern: str  # file names to fetch from it
    md5_suffix: str | None  # checksum published beside each file, if any
    expected: str  # for the help text


SOURCES = {
    "pubmed": Source(
        "https://ftp.ncbi.nlm.nih.gov/pubmed/baseline/",
        r"^pubmed\d+n\d{4}\.xml\.gz$",
        ".md5",
        "~1,200 files, ~40 GB gzipped (yearly baseline)",
    ),
    "pubmed-updates": Source(
        "https://ftp.ncbi.nlm.nih.gov/pubmed/updatefiles/",
        r"^pubmed\d+n\d{4}\.xml\.gz$",
        ".md5",
        "daily update files since the baseline, ~0.1 GB each",
    ),
    "pmc": Source(
        "https://ftp.ncbi.nlm.nih.gov/pub/pmc/oa_bulk/oa_comm/xml/",
        r"^oa_comm_xml\.PMC\d+xxxxxx\.baseline\.[\d-]+\.tar\.gz$",
        None,
        "commercial-use OA subset, ~12 packages, ~80 GB gzipped",
    ),
    "pmc-noncomm": Source(
        "https://ftp.ncbi.nlm.nih.gov/pub/pmc/oa_bulk/oa_noncomm/xml/",
        r"^oa_noncomm_xml\.PMC\d+xxxxxx\.baseline\.[\d-]+\.tar\.gz$",
        None,
        "non-commercial OA subset, ~12 packages, ~40 GB gzipped",
    ),
}


class DownloadError(BioRobertaError):
    """A file could not be fetched or verified after all retries."""


class _LinkParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.extend(value for name, value in attrs if name == "href" and value)


def _open(url: str, timeout: float, headers: dict[str, str] | None = None):
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
    return urllib.request.urlopen(request, timeout=timeout)


def list_files(index_url: str, pattern: str, timeout: float = 60.0) -> list[str]:
    """File names matching `pattern` in an HTTP directory listing, sorted."""
    with _open(index_url, timeout) as response:
        parser = _LinkParser()
        parser.feed(response.read().decode("utf-8", errors="replace"))
    names = {urllib.parse.unquote(link.rsplit("/", 1)[-1]) for link in parser.links}
    return sorted(name for name in names if re.match(pattern, name))


def parse_md5(text: str, name: str) -> str:
    """The hex digest of an NCBI .md5 file ("MD5(name)= hex") or md5sum output ("hex  name")."""
    match = re.search(r"MD5\((?P<name>[^)]*)\)\s*=\s*(?P<hex>[0-9a-fA-F]{32})", text) or re.search(
        r"^(?P<hex>[0-9a-fA-F]{32})\s+\*?(?P<name>\S+)", text, re.MULTILINE
    )
    if not match:
        raise DownloadError(f"{name}.md5: no MD5 digest in {text[:80]!r}")
    if match.group("name") != name:
        raise DownloadError(f"{name}.md5: the digest is for {match.group('name')!r}, not {name!r}")
    return match.group("hex").lower()


def md5_file(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected_md5: str | None, name: str) -> str | None:
    """None when `path` (the file `name`, maybe still a .part) is intact, else why not."""
    if expected_md5 is not None:
        actual = md5_file(path)
        return None if actual == expected_md5 else f"md5 {actual} != published {expected_md5}"
    if name.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as handle:
                while handle.read(CHUNK_BYTES):
                    pass
        except (OSError, EOFError, zlib.error) as error:
            return f"broken gzip stream ({error})"
    return None


def fetch_to_part(url: str, part: Path, timeout: float, progress) -> str:
    """Fetch `url` into `part`, resuming from its current size; returns how ('fresh'/'resumed')."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = _open(url, timeout, headers)
    except urllib.error.HTTPError as error:
        if (
            error.code == 416 and offset
        ):  # nothing left to fetch: the part is complete (verify decides)
            return "resumed"
        raise
    with response:
        if offset and response.status == 206:
            content_range = response.headers.get("Content-Range", "")
            if not content_range.startswith(f"bytes {offset}-"):
                raise DownloadError(
                    f"{url}: asked for bytes {offset}- but got Content-Range {content_range!r}"
                )
            mode, how = "ab", "resumed"
        else:  # the server ignored the Range: start over
            mode, how, offset = "wb", "fresh", 0
        length = response.headers.get("Content-Length")
        expected_end = offset + int(length) if length is not None else None
        with open(part, mode) as out:
            progress.reset(total=expected_end)
            progress.update(offset)
            for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
                out.write(chunk)
                progress.update(len(chunk))
    if expected_end is not None and part.stat().st_size < expected_end:
        raise ConnectionError(
            f"{url}: connection closed at byte {part.stat().st_size} of {expected_end}"
        )
    return how


def download_file(
    url: str,
    dest: Path,
    *,
    md5_url: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 2.0,
    progress: bool = True,
) -> dict[str, Any]:
    """Fetch one file to `dest` (resuming, verifying, retrying); returns its record."""
    from tqdm import tqdm

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    md5_path = dest.with_name(dest.name + ".md5")
    problems: list[str] = []
    for attempt in range(1, retries + 1):
        try:
            expected = None
            if md5_url is not None:
                with _open(md5_url, timeout) as response:
                    md5_text = response.read().decode("utf-8", errors="replace")
                expected = parse_md5(md5_text, dest.name)
            if dest.exists():
                reason = verify(dest, expected, dest.name)
                if reason is None:
                    return {
                        **file_record(dest),
                        "url": url,
                        "md5": expected,
                        "status": "already_present",
                        "attempts": attempt,
                        "problems": problems,
                    }
                problems.append(f"existing {dest.name}: {reason}; fetching again")
                logger.warning("%s: %s; fetching again", dest, reason)
                dest.unlink()
            with tqdm(
                unit="B", unit_scale=True, desc=dest.name, disable=not progress, leave=False
            ) as bar:
                how = fetch_to_part(url, part, timeout, bar)
            reason = verify(part, expected, dest.name)
            if reason is not None:
                part.unlink()
                raise DownloadError(f"{dest.name}: corrupt download: {reason}")
            if md5_url is not None:
                atomic_write_text(md5_path, md5_text)
            os.replace(part, dest)
            return {
                **file_record(dest),
                "url": url,
                "md5": expected,
                "status": how,
                "attempts": attempt,
                "problems": problems,
            }
        except (
            OSError,
            http.client.HTTPException,
            DownloadError,
        ) as error:  # URLError, timeouts, resets: OSError
            problems.append(f"attempt {attempt}: {error}")
            logger.warning("%s: attempt %d of %d failed: %s", url, attempt, retries, error)
            if isinstance(error, urllib.error.HTTPError) and error.code == 404:
                break
            if attempt < retries:
                time.sleep(backoff * 2 ** (attempt - 1))
    raise DownloadError(f"{url}: failed after {len(problems)} attempt(s): {problems[-1]}")


def download_source(
    source: str,
    out_dir: str | os.PathLike,
    *,
    base_url: str | None = None,
    match: str | None = None,
    limit: int | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 2.0,
    progress: bool = True,
) -> dict[str, Any]:
    """Fetch every file of a source (or those matching `match`, at most `limit`) into `out_dir`.

    Writes out_dir/manifest.json with one record per file and the failures; never stops at the
    first bad file.
    """
    from tqdm import tqdm

    spec = SOURCES[source]
    index_url = base_url or spec.url
    if not index_url.endswith("/"):
        index_url += "/"
    names = list_files(index_url, spec.pattern, timeout)
    if match:
        names = [name for name in names if re.search(match, name)]
    if limit is not None:
        names = names[:limit]
    if not names:
        raise DownloadError(
            f"{index_url}: no files match {spec.pattern}" + (f" and {match!r}" if match else "")
        )
    out = Path(out_dir)
    files, failures = [], []
    for name in tqdm(names, desc=f"download {source}", unit="file", disable=not progress):
        url = urllib.parse.urljoin(index_url, urllib.parse.quote(name))
        md5_url = url + spec.md5_suffix if spec.md5_suffix else None
        try:
            files.append(
                download_file(
                    url,
                    out / name,
                    md5_url=md5_url,
                    retries=retries,
                    timeout=timeout,
                    backoff=backoff,
                    progress=progress,
                )
            )
        except DownloadError as error:
            logger.error("%s", error)
            failures.append({"name": name, "url": url, "error": str(error)})
    statuses: dict[str, int] = {}
    for record in files:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    manifest = {
        "source": source,
        "index_url": index_url,
        "verification": "md5 from NAME" + spec.md5_suffix
        if spec.md5_suffix
        else "gzip stream read to its end",
        "options": {"match": match, "limit": limit, "retries": retries, "timeout": timeout},
        "counts": {
            "listed": len(names),
            "ok": len(files),
            "failed": len(failures),
            "by_status": statuses,
            "bytes": sum(record["size"] for record in files),
        },
        "files": files,
        "failures": failures,
        **environment_record(),
    }
    atomic_write_json(out / "manifest.json", manifest)
    return manifest
