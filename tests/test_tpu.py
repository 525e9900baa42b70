"""TPUs without a TPU: the targets (repro/tpu_target.py), the backend (jaxbisect/lab/backends/
tpu.py) with libtpu faked (its pins read from real wheel-shaped zips served by a fake index,
a sysfs tree of files for a chip), and the driver's one-line refusals. The compile with a real
libtpu: test_tpu_compile.py (nox -s tests_tpu)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.error
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import REPO
from packaging.version import Version

from jaxbisect.errors import UserError
from jaxbisect.lab import backends
from jaxbisect.lab.backends.tpu import Pins, Tpu, accelerator_files, chips
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.wheel_metadata import member, metadata_text, requirements
from repro import target as targets
from repro.options import OneLineParser, target_argument

DATA = Path(__file__).parent / "data"
DAY = datetime(2025, 1, 17, tzinfo=UTC)


def wheel(version: str, tpu_lines: list[str], padding: int = 0) -> bytes:
    """A wheel-shaped zip of jax ``version`` whose METADATA adds ``tpu_lines`` for the tpu extra
    (``padding``: a big member ahead of it, so that a ranged read must look past it)."""
    lines = ["Metadata-Version: 2.1", "Name: jax", f"Version: {version}",
             "Requires-Dist: numpy>=1.24", *(f"Requires-Dist: {line}; extra == \"tpu\""
                                             for line in tpu_lines),
             'Requires-Dist: jaxlib==9.9; extra == "cuda"', "", "The long description."]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("jax/__init__.py", os.urandom(padding))
        archive.writestr(f"jax-{version}.dist-info/METADATA", "\n".join(lines))
        archive.writestr(f"jax-{version}.dist-info/RECORD", "")
    return buffer.getvalue()


class Index:
    """A package index of wheel files that answers ranged GETs as files.pythonhosted.org
    does (206 with the range; ``ranges=False``: the whole file, 200); ``down``: unreachable."""

    def __init__(self, wheels: dict[str, bytes], libtpu: dict[str, str], *, ranges=True,
                 down=False):
        self.wheels, self.libtpu, self.ranges, self.down = wheels, libtpu, ranges, down
        self.asked: list[tuple[str, str | None]] = []

    def __call__(self, url: str, byte_range: str | None) -> tuple[int, bytes]:
        self.asked.append((url, byte_range))
        if self.down:
            raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
        if url.endswith("/simple/jax/"):
            return 200, json.dumps({"files": [
                {"filename": name, "url": f"https://files/{name}",
                 "upload-time": "2025-01-17T00:00:00Z"} for name in self.wheels]}).encode()
        if url.endswith("/simple/libtpu/"):
            return 200, json.dumps({"files": [
                {"filename": f"libtpu-{v}-py3-none-manylinux_2_27_x86_64.whl",
                 "url": f"https://files/libtpu-{v}", "upload-time": uploaded, "yanked": False}
                for v, uploaded in self.libtpu.items()]}).encode()
        data = self.wheels[url.rsplit("/", 1)[1]]
        if not self.ranges or byte_range is None:
            return 200, data
        start, _, end = byte_range.partition("-")
        if not start:
            return 206, data[-int(end):]
        return 206, data[int(start):int(end) + 1]


def release(version: str, uploaded: datetime = DAY) -> Release:
    return Release(version=Version(version), uploaded=uploaded, yanked=False,
                   requires_python=">=3.10", jaxlib=Version(version), jaxlib_uploaded=uploaded,
                   jaxlib_pythons=frozenset({"cp311"}))


LIBTPU = {"0.0.8": "2025-02-05T02:22:35Z", "0.0.17": "2025-06-13T00:00:00Z",
          "0.0.17.1": "2025-11-08T00:00:00Z", "0.0.10": "2025-02-21T21:07:16Z"}
WHEELS = {
    "jax-0.4.30-py3-none-any.whl": wheel("0.4.30", ["libtpu-nightly==0.1.dev20240617"]),
    "jax-0.5.0-py3-none-any.whl": wheel("0.5.0", [
        "libtpu-nightly==0.1.dev20241010+nightly.cleanup", "libtpu==0.0.8"], padding=200_000),
    "jax-0.6.2-py3-none-any.whl": wheel("0.6.2", ["libtpu==0.0.17.*"]),
}


def backend(tmp_path, index: Index, root: str = "/") -> Tpu:
    return Tpu(Pins(index, tmp_path / "libtpu.json"), root=root)


# -- a wheel's metadata -----------------------------------------------------------------------

@pytest.mark.parametrize("ranges", [True, False])
def test_metadata_is_read_from_the_wheel_with_ranges_or_whole(ranges):
    index = Index(WHEELS, LIBTPU, ranges=ranges)
    text = metadata_text({"url": "https://files/jax-0.5.0-py3-none-any.whl"}, index)
    assert {f"{r.name}{r.specifier}" for r in requirements(text, "tpu")} == {
        "libtpu-nightly==0.1.dev20241010+nightly.cleanup", "libtpu==0.0.8"}
    if ranges:  # two small reads, never the 200 kB member ahead of it
        assert len(index.asked) == 2 and all(r for _, r in index.asked)


def test_a_non_zip_is_a_value_error():
    with pytest.raises(ValueError, match="not a zip"):
        member(b"hello", None, lambda url, r: (200, b""), "x")


# -- the pins ---------------------------------------------------------------------------------

def test_pins_of_each_kind_of_release(tmp_path):
    tpu = backend(tmp_path, Index(WHEELS, LIBTPU))
    tpu.prepare([release("0.4.30"), release("0.5.0"), release("0.6.2")])
    # Only libtpu-nightly, from Google's index: unavailable, in one line naming libtpu.
    why = tpu.unavailable(release("0.4.30"))
    assert why.startswith("its libtpu comes only from Google's own index")
    assert "libtpu-nightly==0.1.dev20240617" in why
    # libtpu 0.0.8 landed weeks after jax 0.5.0: still that one, exempt from the cut-off.
    plan = tpu.install_plan(release("0.5.0"))
    assert plan.requirements == ("jax==0.5.0", "jaxlib==0.5.0", "libtpu==0.0.8")
    assert plan.date_exempt == ("libtpu",) and plan.exclude_newer < datetime(2025, 2, 5, tzinfo=UTC)
    # A wildcard pin: the newest match as of the release's day, not today's.
    assert tpu.libtpu(release("0.6.2", datetime(2025, 6, 17, tzinfo=UTC))) == ("0.0.17", None)
    assert tpu.libtpu(release("0.6.2", datetime(2025, 12, 1, tzinfo=UTC))) == ("0.0.17.1", None)
    assert tpu.unusable(release("0.5.0"), (3, 11)) is None
    # A release without a wheel to read.
    assert "no wheel on PyPI" in tpu.unavailable(release("0.4.99"))
    assert tpu.pip_words("0.5.0", "0.5.0", {"libtpu": "0.0.8"}) == (
        "jax==0.5.0 jaxlib==0.5.0 libtpu==0.0.8")


def test_pins_are_read_once_and_kept_beside_the_catalogue(tmp_path):
    index = Index(WHEELS, LIBTPU)
    assert backend(tmp_path, index).libtpu(release("0.5.0")) == ("0.0.8", None)
    read = len(index.asked)
    again = backend(tmp_path, Index(WHEELS, LIBTPU, down=True))  # another process, offline
    assert again.libtpu(release("0.5.0")) == ("0.0.8", None)
    assert read and json.loads((tmp_path / "libtpu.json").read_text())["pins"]["0.5.0"][
        "libtpu"] == "==0.0.8"


def test_no_index_reachable_is_one_line_per_release_and_asked_once(tmp_path):
    index = Index(WHEELS, LIBTPU, down=True)
    tpu = backend(tmp_path, index)
    tpu.prepare([release("0.5.0"), release("0.6.2")])
    why = tpu.unavailable(release("0.5.0"))
    assert why == ("cannot read jax 0.5.0's libtpu pin: no package index is reachable "
                   "([Errno -3] Temporary failure in name resolution)")
    assert tpu.unavailable(release("0.6.2")).startswith("cannot read jax 0.6.2's libtpu pin")
    assert len(index.asked) == 1  # one failure a process: no wait on every release
    with pytest.raises(UserError, match="no package index is reachable"):
        tpu.install_plan(release("0.5.0"))


# -- is a TPU here? ---------------------------------------------------------------------------

def fake_machine(root: Path, vendor: str, device: str, files: tuple[str, ...] = ()) -> str:
    slot = root / "sys/bus/pci/devices/0000:00:05.0"
    slot.mkdir(parents=True)
    (slot / "vendor").write_text(vendor + "\n")
    (slot / "device").write_text(device + "\n")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return str(root)


def test_a_chip_is_seen_as_jax_sees_it(tmp_path):
    v5e = fake_machine(tmp_path / "v5e", "0x1ae0", "0x0063", ("dev/vfio/0", "dev/vfio/vfio"))
    assert chips(v5e) == ["v5e"] and accelerator_files(v5e) == [f"{v5e}/dev/vfio/0"]
    assert Tpu(root=v5e).visible()
    nvidia = fake_machine(tmp_path / "gpu", "0x10de", "0x2230", ("dev/vfio/vfio",))
    assert chips(nvidia) == [] and accelerator_files(nvidia) == []
    assert not Tpu(root=nvidia).visible()


def test_resolving_a_tpu():
    def only(*names):
        return lambda b: b.name in names

    assert backends.resolve("auto", visible=only("cpu", "tpu")) == "tpu"
    assert backends.resolve("auto", visible=only("cpu", "tpu", "cuda12")) == "tpu"
    assert backends.resolve("tpu", visible=only("cpu", "tpu")) == "tpu"
    with pytest.raises(UserError, match="no TPU is visible here"):
        backends.resolve("tpu", visible=only("cpu"))
    # A TPU target compiles on any machine, in the TPU's own environments.
    assert backends.resolve("auto", "v5e", visible=only("cpu")) == "tpu"
    assert backends.resolve("tpu", "v6e", visible=only("cpu")) == "tpu"
    for asked in ("cpu", "cuda12"):
        with pytest.raises(UserError, match="compiles for TPU v5e; --backend .* contradicts"):
            backends.resolve(asked, "v5e")
    assert backends.words("tpu", "v5e") == "TPU v5e (compile-only)"
    assert backends.for_target("tpu").name == "tpu" == backends.for_target("tpu").target_kind


# -- the targets ------------------------------------------------------------------------------

def test_the_tpu_targets():
    assert {"v4", "v5e", "v5p", "v6e"} == set(targets.built_in("tpu"))
    v5e = targets.load("V5E")
    assert v5e.as_json() == {"name": "v5e", "kind": "tpu", "description": "TPU v5e",
                             "source": "built in: topology v5e:2x2"}
    assert (v5e.platform, v5e.backend_label) == ("tpu", "tpu (compile-only)")
    assert v5e.plan_words == "XLA's plan for a TPU v5e, not a measurement on one"
    assert targets.plan_words(v5e.as_json()) == v5e.plan_words
    # a document from before kinds describes a GPU
    assert targets.plan_words({"description": "NVIDIA RTX A6000"}).startswith("compiled for")
    environ = {"JAX_PLATFORMS": "tpu"}
    v5e.configure(environ)
    assert environ == {"JAX_PLATFORMS": "cpu", "TPU_SKIP_MDS_QUERY": "true",
                       "TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_WORKER_HOSTNAMES": "localhost",
                       "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}
    assert v5e.sha256 != targets.load("v6e").sha256
    assert "libtpu is not installed" in v5e.explain_error(
        "RuntimeError: JAX TPU support not installed; cannot generate TPU topology.")
    assert v5e.explain_error("RESOURCE_EXHAUSTED: Ran out of memory on HBM") is None
    assert "tpu" in targets.PLATFORMS and targets.PLATFORMS["tpu"] == "tpu"


def test_a_tpu_target_refuses_another_platform():
    p = OneLineParser(prog="python -m repro")
    with pytest.raises(SystemExit):
        target_argument(p, "v5e", "cuda")
    assert target_argument(p, "v5e", "tpu").name == "v5e"
    assert target_argument(p, "v5e", "auto").name == "v5e"


# -- the driver, without a TPU and without the network ----------------------------------------

def cached_pins(cache: Path) -> None:
    """The libtpu pins as the index answered them (tests/data/libtpu.json), kept fresh."""
    kept = json.loads((DATA / "libtpu.json").read_text())
    kept["listed_at"] = datetime.now(UTC).isoformat()
    (cache / "catalogue").mkdir(parents=True, exist_ok=True)
    (cache / "catalogue" / "libtpu.json").write_text(json.dumps(kept))


def bisect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxbisect", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))


def test_releases_before_libtpu_on_pypi_are_one_line(recorded_catalogue, tmp_path):
    cached_pins(Path(os.environ["JAX_SCAN_REPRO_CACHE"]))
    done = bisect("--from", "0.4.30", "--to", "0.4.35", "--target", "v5e",
                  "--reports", str(tmp_path / "reports"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == ("python -m bisect: error: jax 0.4.30 cannot be installed here for TPU v5e "
                    "(compile-only): its libtpu comes only from Google's own index (it pins "
                    "libtpu-nightly==0.1.dev20240617, not on PyPI): no libtpu on PyPI pairs "
                    "with it")
    assert not (tmp_path / "reports").exists()


@pytest.mark.skipif(Tpu().visible(), reason="a TPU is visible here")
def test_backend_tpu_without_a_tpu_is_one_line(recorded_catalogue, tmp_path):
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "tpu",
                  "--reports", str(tmp_path))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "no TPU is visible here" in line and "--target v5e" in line


def test_help_lists_the_tpu_targets_and_backend():
    done = bisect("--help")
    text = " ".join(done.stdout.split())
    assert "v4, v5e, v5p, v6e" in text and "auto, cpu, cuda12, tpu" in text


def test_a_report_names_the_tpu_and_says_it_is_a_plan():
    """The first screen of a TPU target's report, rendered from a document as the pipeline
    writes it (the real run: nox -s tests_tpu)."""
    from jaxbisect.report.markdown import render

    doc = json.loads((DATA / "tpu-v5e-report.json").read_text())
    text = render(doc)
    head = text.split("## Details")[0]
    assert "XLA's plan for a TPU v5e, not a measurement on one" in head.splitlines()[0]
    assert "**No change (XLA's plan for a TPU v5e, not a measurement on one)" in head
    assert "pip install jax==0.5.0 jaxlib==0.5.0 libtpu==0.0.8" in text
    assert "on a machine with a TPU v5e" in text
