"""A wheel's own metadata (its ``METADATA`` file) read from the package index, not installed.

What a release requires (``Requires-Dist``) is in its wheel's metadata and nowhere else:
PyPI's JSON API names it for a project's newest version only. The index serves it as the
file beside the wheel (``….whl.metadata``, PEP 658) where it has one; otherwise the ``METADATA``
member is read out of the wheel itself with two ranged requests (the zip's directory at its
end, then the member), a few kilobytes instead of the whole wheel. Every fetch is injectable.
"""

from __future__ import annotations

import json
import struct
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable

from packaging.requirements import InvalidRequirement, Requirement

# fetch(url, byte range or None) -> (HTTP status, body): a range is "START-END" or "-LAST".
RangedFetch = Callable[[str, str | None], tuple[int, bytes]]
SIMPLE = "https://pypi.org/simple/{}/"
TIMEOUT = 20.0
TAIL = 65536  # the end of a wheel read first: its central directory lies in it


def http_get(url: str, byte_range: str | None = None) -> tuple[int, bytes]:
    headers = {"Range": f"bytes={byte_range}"} if byte_range else {}
    if url.startswith(SIMPLE.split("{")[0]):
        headers["Accept"] = "application/vnd.pypi.simple.v1+json"
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                timeout=TIMEOUT) as response:
        return response.status, response.read()


def wheel_files(project: str, fetch: RangedFetch = http_get) -> dict[str, dict]:
    """The index's files of ``project`` by file name (PEP 691's JSON: url, core-metadata …)."""
    _, body = fetch(SIMPLE.format(project), None)
    return {f["filename"]: f for f in json.loads(body)["files"]}


def metadata_text(file: dict, fetch: RangedFetch = http_get) -> str:
    """The METADATA of one wheel (an entry of :func:`wheel_files`)."""
    url = file["url"]
    if file.get("core-metadata") or file.get("data-dist-info-metadata"):
        try:
            return fetch(url + ".metadata", None)[1].decode("utf-8")
        except urllib.error.HTTPError:
            pass  # announced but not served (a mirror): read it from the wheel
    status, tail = fetch(url, f"-{TAIL}")
    if status != 206:  # the index sent the whole wheel
        return member(tail, None, fetch, url)
    return member(tail, tail, fetch, url)


def member(data: bytes, tail: bytes | None, fetch: RangedFetch, url: str) -> str:
    """``*.dist-info/METADATA`` of the zip ``data`` (whole), or of the wheel at ``url`` whose
    last bytes are ``tail`` (a range more is fetched for the member)."""
    end = data.rfind(b"PK\x05\x06")
    if end < 0:
        raise ValueError("not a zip archive (no end of central directory)")
    size, offset = struct.unpack("<II", data[end + 12:end + 20])
    directory = data[end - size:end]
    at = 0
    while at + 46 <= len(directory):
        (method, packed, name_len, extra_len, comment_len, local) = (
            struct.unpack("<H", directory[at + 10:at + 12])[0],
            struct.unpack("<I", directory[at + 20:at + 24])[0],
            *struct.unpack("<HHH", directory[at + 28:at + 34]),
            struct.unpack("<I", directory[at + 42:at + 46])[0])
        name = directory[at + 46:at + 46 + name_len].decode("utf-8", "replace")
        if name.endswith(".dist-info/METADATA") and name.count("/") == 1:
            if tail is None:
                header = data[local:local + 30 + name_len + 1024 + packed]
            else:  # the local header holds its own name and extra field: read some spare
                header = fetch(url, f"{local}-{local + 30 + name_len + 1024 + packed}")[1]
            start = 30 + sum(struct.unpack("<HH", header[26:30]))
            raw = header[start:start + packed]
            return (zlib.decompress(raw, -15) if method == 8 else raw).decode("utf-8")
        at += 46 + name_len + extra_len + comment_len
    raise ValueError("the wheel holds no .dist-info/METADATA")


def requirements(text: str, extra: str) -> list[Requirement]:
    """The ``Requires-Dist`` lines of METADATA ``text`` that ``extra`` adds."""
    found = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            if not line.strip():  # the headers end at the first blank line
                break
            continue
        try:
            requirement = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is not None and marker.evaluate({"extra": extra}) \
                and not marker.evaluate({"extra": ""}):
            found.append(requirement)
    return found
