"""Downloads against a local HTTP server (127.0.0.1 only) that serves Range requests and can cut a
transfer short or corrupt it: resume, md5 / gzip verification, re-fetch and clear failure."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from bio_roberta.cli import main as cli_main
from preprocess.download import DownloadError, download_file, download_source, parse_md5


class FaultyRangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with HTTP Range support; `cut_once` sends only the first N bytes of a file once,
    `corrupt` serves a file with one byte flipped the given number of times."""

    cut_once: dict[str, int] = {}
    corrupt: dict[str, int] = {}
    requests: list[tuple[str, str | None]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            return super().do_GET()
        self.requests.append((path.name, self.headers.get("Range")))
        if not path.is_file():
            return self.send_error(404)
        data = path.read_bytes()
        if self.corrupt.get(path.name, 0) > 0:
            self.corrupt[path.name] -= 1
            data = data[:10] + bytes([data[10] ^ 0xFF]) + data[11:]
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].removeprefix("bytes=").rstrip("-"))
            if start >= len(data):
                return self.send_error(416)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.cut_once.pop(path.name, None)
        self.wfile.write(body[:cut] if cut is not None else body)
        if cut is not None:
            self.close_connection = True


def pubmed_file(number: int) -> bytes:
    records = "".join(
        f'<PubmedArticle><MedlineCitation><PMID Version="1">{number * 1000 + i}</PMID><Article>'
        f"<ArticleTitle>Synthetic title {i} about EGFR and tamoxifen.</ArticleTitle></Article>"
        f"</MedlineCitation></PubmedArticle>"
        for i in range(200)
    )
    return gzip.compress(
        f'<?xml version="1.0"?><PubmedArticleSet>{records}</PubmedArticleSet>'.encode(), mtime=0
    )


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "remote"
    (root / "baseline").mkdir(parents=True)
    (root / "oa").mkdir()
    for number in (1, 2, 3):
        name = f"pubmed24n{number:04d}.xml.gz"
        data = pubmed_file(number)
        (root / "baseline" / name).write_bytes(data)
        (root / "baseline" / (name + ".md5")).write_text(
            f"MD5({name})= {hashlib.md5(data).hexdigest()}\n"
        )
    (root / "baseline" / "README.txt").write_text("not a baseline file\n")
    good = pubmed_file(7)
    (root / "oa" / "oa_comm_xml.PMC000xxxxxx.baseline.2024-06-18.tar.gz").write_bytes(good)
    (root / "oa" / "oa_comm_xml.PMC001xxxxxx.baseline.2024-06-18.tar.gz").write_bytes(
        good[: len(good) // 2]
    )
    FaultyRangeHandler.cut_once, FaultyRangeHandler.corrupt, FaultyRangeHandler.requests = (
        {},
        {},
        [],
    )
    handler = lambda *args, **kwargs: FaultyRangeHandler(*args, directory=str(root), **kwargs)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def test_downloads_the_listed_files_verifies_md5_and_skips_them_next_time(server, tmp_path):
    url, root = server
    manifest = download_source(
        "pubmed", tmp_path / "out", base_url=f"{url}/baseline/", backoff=0, progress=False
    )
    names = [f"pubmed24n{n:04d}.xml.gz" for n in (1, 2, 3)]
    assert [record["path"].rsplit("/", 1)[-1] for record in manifest["files"]] == names
    assert manifest["counts"] == {
        "listed": 3,
        "ok": 3,
        "failed": 0,
        "by_status": {"fresh": 3},
        "bytes": sum((root / "baseline" / n).stat().st_size for n in names),
    }
    for name in names:
        assert (tmp_path / "out" / name).read_bytes() == (root / "baseline" / name).read_bytes()
        assert (tmp_path / "out" / (name + ".md5")).is_file()
        assert not (tmp_path / "out" / (name + ".part")).exists()
    again = download_source(
        "pubmed", tmp_path / "out", base_url=f"{url}/baseline/", backoff=0, progress=False
    )
    assert again["counts"]["by_status"] == {"already_present": 3}


def baseline_file(url: str, name: str, out: Path) -> dict:
    """download_file of the baseline's `name` into out, checked against its .md5, no backoff."""
    return download_file(
        f"{url}/baseline/{name}",
        out / name,
        md5_url=f"{url}/baseline/{name}.md5",
        backoff=0,
        progress=False,
    )


def test_an_interrupted_transfer_resumes_with_a_range_request(server, tmp_path):
    url, root = server
    name = "pubmed24n0002.xml.gz"
    size = (root / "baseline" / name).stat().st_size
    FaultyRangeHandler.cut_once[name] = size // 3
    record = baseline_file(url, name, tmp_path)
    assert record["status"] == "resumed" and record["attempts"] == 2
    assert "connection closed" in record["problems"][0] or "IncompleteRead" in record["problems"][0]
    assert (name, f"bytes={size // 3}-") in FaultyRangeHandler.requests
    assert (tmp_path / name).read_bytes() == (root / "baseline" / name).read_bytes()


def test_a_partial_file_left_by_an_earlier_run_is_resumed(server, tmp_path):
    url, root = server
    name = "pubmed24n0003.xml.gz"
    data = (root / "baseline" / name).read_bytes()
    (tmp_path / (name + ".part")).write_bytes(data[:100])
    record = baseline_file(url, name, tmp_path)
    assert record["status"] == "resumed" and record["attempts"] == 1
    assert FaultyRangeHandler.requests[-1] == (name, "bytes=100-")
    assert (tmp_path / name).read_bytes() == data


def test_a_corrupt_transfer_is_detected_and_fetched_again(server, tmp_path):
    url, root = server
    name = "pubmed24n0001.xml.gz"
    FaultyRangeHandler.corrupt[name] = 1
    record = baseline_file(url, name, tmp_path)
    assert record["attempts"] == 2 and "corrupt download: md5" in record["problems"][0]
    assert (tmp_path / name).read_bytes() == (root / "baseline" / name).read_bytes()
    # a file corrupted on disk since is found on the next run and replaced
    (tmp_path / name).write_bytes(b"garbage")
    record = baseline_file(url, name, tmp_path)
    assert "existing pubmed24n0001.xml.gz: md5" in record["problems"][0]
    assert (tmp_path / name).read_bytes() == (root / "baseline" / name).read_bytes()


def test_a_persistently_corrupt_file_fails_clearly_and_the_others_still_download(
    server, tmp_path, capsys
):
    url, _ = server
    FaultyRangeHandler.corrupt["pubmed24n0002.xml.gz"] = 100
    status = cli_main(
        [
            "download",
            "pubmed",
            "--out",
            str(tmp_path / "out"),
            "--base-url",
            f"{url}/baseline",
            "--retries",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert "2 of 3 files ok" in out and "1 failed" in out
    assert "FAILED pubmed24n0002.xml.gz" in out and "md5" in out
    assert not (tmp_path / "out" / "pubmed24n0002.xml.gz").exists()
    assert not (tmp_path / "out" / "pubmed24n0002.xml.gz.part").exists()


def test_packages_without_checksums_are_verified_by_reading_the_gzip_stream(server, tmp_path):
    url, _ = server
    manifest = download_source(
        "pmc", tmp_path / "pmc", base_url=f"{url}/oa/", retries=2, backoff=0, progress=False
    )
    assert manifest["counts"]["ok"] == 1 and manifest["counts"]["failed"] == 1
    failure = manifest["failures"][0]
    assert (
        failure["name"].startswith("oa_comm_xml.PMC001")
        and "broken gzip stream" in failure["error"]
    )
    assert manifest["verification"] == "gzip stream read to its end"


def test_md5_files_and_missing_files(server, tmp_path):
    assert (
        parse_md5("MD5(pubmed24n0001.xml.gz)= " + "a" * 32 + "\n", "pubmed24n0001.xml.gz")
        == "a" * 32
    )
    assert parse_md5("B" * 32 + "  x.gz\n", "x.gz") == "b" * 32
    with pytest.raises(DownloadError, match="the digest is for 'other.gz'"):
        parse_md5("MD5(other.gz)= " + "a" * 32, "x.gz")
    url, _ = server
    with pytest.raises(DownloadError, match="404"):
        download_file(
            f"{url}/baseline/missing.xml.gz", tmp_path / "missing.xml.gz", backoff=0, progress=False
        )
    with pytest.raises(DownloadError, match="no files match"):
        download_source("pubmed", tmp_path, base_url=f"{url}/oa/", progress=False)
