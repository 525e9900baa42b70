"""The release catalogue, from PyPI responses recorded in tests/data/ (no network).

The fixtures are PyPI's JSON for jax, jaxlib and jax-cuda12-plugin, recorded 2026-11-30 and cut
down with ``jaxbisect.lab.catalogue.trim`` (one file entry a line). To re-record one:
``curl -s https://pypi.org/pypi/jaxlib/json`` and write ``trim(json.load(...))`` in that shape.
"""

from __future__ import annotations

import json
import os
import urllib.error
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from jaxbisect.errors import NoNetwork, UnknownRelease, UserError
from jaxbisect.lab import backends
from jaxbisect.lab import catalogue as catalogue_module
from jaxbisect.lab.catalogue import Catalogue, Release, load_catalogue, trim

CPU = backends.get("cpu")
CUDA12 = backends.get("cuda12")

DATA = Path(__file__).parent / "data"
PY311 = (3, 11)


def recorded(url: str) -> bytes:
    """A ``fetch`` that answers PyPI's JSON URLs from the recorded fixtures."""
    return (DATA / f"pypi-{url.rstrip('/').split('/')[-2]}.json").read_bytes()


def offline(url: str) -> bytes:
    raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def cat(tmp_path_factory) -> Catalogue:
    """One catalogue for the tests that only read it (building one takes ~0.1 s)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path_factory.mktemp("catalogue")))
        return load_catalogue(fetch=recorded)


def versions(releases) -> list[str]:
    return [str(r.version) for r in releases]


@pytest.mark.parametrize(
    "jax, jaxlib",
    [("0.4.20", "0.4.20"), ("0.4.37", "0.4.36"), ("0.5.2", "0.5.1"), ("0.5.0", "0.5.0"),
     ("0.9.0.1", "0.9.0.1"), ("0.4.32", "0.4.32")],  # a yanked jax keeps its own yanked jaxlib
)
def test_pairs_each_release_with_its_jaxlib(cat, jax, jaxlib):
    release = cat.get(jax)
    assert release.jaxlib == Version(jaxlib)
    if release.version >= Version("0.4.22"):  # the first CUDA 12 plugin on PyPI
        assert release.cuda_plugin == Version(jaxlib)
    else:
        assert release.cuda_plugin is None


def test_releases_are_sorted_by_version_not_by_string(cat):
    listed = [r.version for r in cat.releases]
    assert listed == sorted(listed)
    assert listed.index(Version("0.4.9")) < listed.index(Version("0.4.10"))
    assert all(isinstance(v, Version) for v in listed)


def test_upload_times_count_only_files_used_here(cat):
    release = cat.get("0.4.20")
    # jax's wheel at 21:51; jaxlib's linux wheels up to 23:25 (cp39, an hour after cp311).
    assert release.uploaded.date() == release.jaxlib_uploaded.date() == datetime(2023, 11, 2).date()
    assert release.uploaded.tzinfo is not None
    assert release.jaxlib_pythons >= {"cp39", "cp310", "cp311", "cp312"}
    # jax 0.10.0's sdist came six days after its wheel; 0.5.3's free-threaded wheel, six days late.
    assert cat.get("0.10.0").uploaded < datetime(2026, 4, 17, tzinfo=UTC)
    assert cat.get("0.5.3").jaxlib_uploaded < datetime(2025, 3, 20, tzinfo=UTC)
    assert not any(p.endswith("t") for p in cat.get("0.5.3").jaxlib_pythons)


def test_cutoff_follows_both_uploads_and_precedes_numpy_2(cat):
    release = cat.get("0.4.20")
    cutoff = release.cutoff()
    assert cutoff > release.uploaded and cutoff > release.jaxlib_uploaded
    assert cutoff - max(release.uploaded, release.jaxlib_uploaded) <= timedelta(days=1)
    assert cutoff < datetime(2024, 6, 16, tzinfo=UTC)  # numpy 2.0.0
    assert cat.get("0.4.37").cutoff() > cat.get("0.4.37").uploaded  # its jaxlib is older


def test_yanked_releases(cat):
    assert cat.get("0.4.32").yanked and cat.get("0.4.15").yanked
    assert not cat.get("0.4.31").yanked
    assert cat.unusable_reason(cat.get("0.4.32"), CPU, PY311) == "yanked"
    nearest = r"0\.4\.32 was yanked; nearest releases: 0\.4\.31, 0\.4\.33"
    with pytest.raises(UnknownRelease, match=nearest):
        cat.get("0.4.32", allow_yanked=False)


@pytest.mark.parametrize("version", ["0.4.20", "0.4.37", "0.5.2", "0.6.0", "0.10.2"])
@pytest.mark.parametrize("backend", ["cpu", "cuda12"])
def test_period_releases_are_usable_on_311(cat, version, backend):
    assert cat.unusable_reason(cat.get(version), backends.get(backend), PY311) is None


def test_python_filtering(cat):
    new = cat.get("0.11.0")
    assert cat.unusable_reason(new, CPU, PY311) == "requires Python >=3.12 (this is 3.11)"
    assert cat.unusable_reason(new, CPU, (3, 12)) is None
    old = cat.get("0.4.31")
    assert cat.unusable_reason(old, CPU, (3, 9)) == "requires Python >=3.10 (this is 3.9)"
    # Python allowed, but jaxlib 0.7.0 was never built for 3.14.
    reason = cat.unusable_reason(cat.get("0.7.0"), CPU, (3, 14))
    assert reason.startswith("no jaxlib 0.7.0 wheel for cp314 on linux ")


def test_releases_whose_jaxlib_left_pypi(cat):
    assert cat.get("0.4.10").jaxlib is None
    assert "no jaxlib on PyPI" in cat.unusable_reason(cat.get("0.4.10"), CPU, PY311)
    # jaxlib 0.4.13's wheels were uploaded again in 2025: no cut-off can date 0.4.13..0.4.17.
    for version in ("0.4.13", "0.4.14", "0.4.17"):
        assert "long after the release" in cat.unusable_reason(cat.get(version), CPU, PY311)


def test_cuda12_reasons(cat):
    release = cat.get("0.5.0")
    no_plugin = Release(**{**release.__dict__, "cuda_plugin": None, "cuda_plugin_uploaded": None,
                           "cuda_plugin_pythons": frozenset()})
    assert cat.unusable_reason(no_plugin, CPU, PY311) is None
    assert cat.unusable_reason(no_plugin, CUDA12, PY311) == "no jax-cuda12-plugin 0.5.0 on PyPI"
    assert cat.get("0.4.21").cuda_plugin is None  # before the plugin: JAX's find-links page
    assert cat.unusable_reason(cat.get("0.4.21"), CUDA12, PY311) is None
    with pytest.raises(UserError, match="unknown backend"):
        cat.unusable_reason(release, backends.get("rocm"), PY311)


def test_between_orders_and_explains(cat):
    usable, unusable = cat.between("0.4.30", "0.4.38", CPU, PY311)
    assert versions(usable) == ["0.4.30", "0.4.31", "0.4.33", "0.4.34", "0.4.35", "0.4.36",
                                "0.4.37", "0.4.38"]  # 0.4.32 is yanked: left out
    assert unusable == []
    usable, unusable = cat.between("0.10.1", "0.11.1", CPU, PY311)
    assert versions(usable) == ["0.10.1", "0.10.2"]
    assert [(str(r.version), why) for r, why in unusable] == [
        ("0.11.0", "requires Python >=3.12 (this is 3.11)"),
        ("0.11.1", "requires Python >=3.12 (this is 3.11)"),
    ]
    usable, _ = cat.between("0.4.20", "0.4.20", CPU, PY311)
    assert versions(usable) == ["0.4.20"]


def test_between_keeps_a_yanked_end_only_when_named(cat):
    usable, unusable = cat.between("0.4.32", "0.4.33", CPU, PY311)
    assert versions(usable) == ["0.4.32", "0.4.33"] and unusable == []
    usable, _ = cat.between("0.4.31", "0.4.33", CPU, PY311)
    assert versions(usable) == ["0.4.31", "0.4.33"]


def test_between_rejects_bad_ranges(cat):
    with pytest.raises(UserError, match="empty range"):
        cat.between("0.5.0", "0.4.20", CPU)
    with pytest.raises(UnknownRelease, match="0.4.99 was never released"):
        cat.between("0.4.20", "0.4.99", CPU)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_between_matches_a_brute_force_filter(cat, data):
    listed = [r for r in cat.releases if r.version >= Version("0.4")]
    lo = data.draw(st.sampled_from(listed))
    hi = data.draw(st.sampled_from([r for r in listed if r.version >= lo.version]))
    usable, unusable = cat.between(str(lo.version), str(hi.version), CPU, PY311)
    returned = usable + [r for r, _ in unusable]
    expected = [r for r in cat.releases if lo.version <= r.version <= hi.version
                and (not r.yanked or r in (lo, hi))]
    assert sorted(returned, key=lambda r: r.version) == expected
    assert [r.version for r in usable] == sorted(r.version for r in usable)
    assert [r.version for r, _ in unusable] == sorted(r.version for r, _ in unusable)
    assert all(why for _, why in unusable)


def test_unknown_versions_name_their_neighbours(cat):
    with pytest.raises(UnknownRelease) as caught:
        cat.get("0.4.99")
    message = str(caught.value)
    assert message == "jax 0.4.99 was never released; nearest releases: 0.4.38, 0.5.0"
    with pytest.raises(UnknownRelease, match=r"'banana' is not a version number"):
        cat.get("banana")
    assert cat.get("v0.4.20").version == Version("0.4.20")  # packaging normalises the spelling
    assert cat.get("0.4.20.0") is cat.get("0.4.20")


def test_unparseable_versions_are_skipped(cache):
    def odd(url):
        document = json.loads(recorded(url))
        if "/jax/" in url:
            document["releases"]["not-a-version"] = document["releases"]["0.4.20"]
            document["releases"]["0.4.99"] = []  # a release with no files
        return json.dumps(document).encode()

    cat = load_catalogue(fetch=odd)
    assert "not-a-version" not in versions(cat.releases)
    with pytest.raises(UnknownRelease):
        cat.get("0.4.99")


def test_trim_keeps_only_what_is_read():
    raw = {"info": {"name": "jax", "version": "1", "description": "long"},
           "releases": {"1": [{"filename": "jax-1-py3-none-any.whl", "upload_time_iso_8601":
                               "2024-01-01T00:00:00Z", "yanked": True, "requires_python": None,
                               "yanked_reason": "broken wheel", "digests": {}, "size": 3}]},
           "urls": [], "vulnerabilities": []}
    assert trim(raw) == {"info": {"name": "jax"}, "releases": {"1": [
        {"filename": "jax-1-py3-none-any.whl", "upload_time_iso_8601": "2024-01-01T00:00:00Z",
         "yanked": True, "yanked_reason": "broken wheel", "requires_python": None}]}}


def test_cache_is_reused_while_fresh(cache):
    calls = []

    def counting(url):
        calls.append(url)
        return recorded(url)

    first = load_catalogue(fetch=counting)
    assert not first.from_cache and not first.stale and len(calls) == 3
    assert sorted(p.name for p in (cache / "catalogue").iterdir()) == [
        "jax-cuda12-plugin.json", "jax.json", "jaxlib.json"]
    second = load_catalogue(fetch=offline)
    assert second.from_cache and not second.stale
    assert second.releases == first.releases and second.fetched_at == first.fetched_at
    assert len(calls) == 3
    load_catalogue(fetch=counting, refresh=True)
    load_catalogue(fetch=counting, max_age=timedelta(0))
    assert len(calls) == 9


def test_offline_with_a_cache_uses_it_and_warns(cache, capsys):
    fresh = load_catalogue(fetch=recorded)
    capsys.readouterr()
    old = load_catalogue(fetch=offline, max_age=timedelta(0))
    assert old.stale and old.from_cache and old.releases == fresh.releases
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: cannot reach PyPI")
    assert "Temporary failure in name resolution" in err


def test_offline_without_a_cache_is_a_clear_error(cache):
    with pytest.raises(NoNetwork) as caught:
        load_catalogue(fetch=offline)
    assert "\n" not in str(caught.value) and "cannot reach PyPI" in str(caught.value)
    assert not (cache / "catalogue").exists()


def test_a_corrupt_cache_counts_as_none(cache):
    load_catalogue(fetch=recorded)
    (cache / "catalogue" / "jaxlib.json").write_text("{not json")
    with pytest.raises(NoNetwork):
        load_catalogue(fetch=offline)
    assert not load_catalogue(fetch=recorded).from_cache


def test_garbage_from_pypi_falls_back_like_an_outage(cache):
    with pytest.raises(NoNetwork):
        load_catalogue(fetch=lambda url: b"<html>captive portal</html>")


def test_default_fetch_goes_through_urllib(cache, monkeypatch):
    seen = []

    def fake_urlopen(request, timeout):
        seen.append((request.full_url, timeout))
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(catalogue_module.urllib.request, "urlopen", fake_urlopen)
    with pytest.raises(NoNetwork, match="offline"):
        load_catalogue()
    assert seen == [("https://pypi.org/pypi/jax/json", 20)]


@pytest.mark.skipif(not os.environ.get("JAX_SCAN_REPRO_LIVE_PYPI"), reason="set to hit PyPI")
def test_live_pypi_agrees_with_the_recording():
    live = load_catalogue(refresh=True)
    assert live.get("0.4.37").jaxlib == Version("0.4.36")


WRONG_SHAPES = {
    "pypi is null": lambda entry: {**entry, "pypi": None},
    "releases is a list": lambda entry: {**entry, "pypi": {**entry["pypi"], "releases": []}},
    "no releases at all": lambda entry: {**entry, "pypi": {**entry["pypi"], "releases": {}}},
    "files are not a list": lambda entry: {**entry, "pypi": {**entry["pypi"],
                                                             "releases": {"0.5.0": "x"}}},
    "a file without its time": lambda entry: {**entry, "pypi": {**entry["pypi"], "releases": {
        "0.5.0": [{"filename": "jax-0.5.0-py3-none-any.whl", "yanked": False}]}}},
    "fetched_at is a number": lambda entry: {**entry, "fetched_at": 7},
    "a list, not an object": lambda entry: [entry],
}


@pytest.mark.parametrize("damage", WRONG_SHAPES.values(), ids=WRONG_SHAPES.keys())
def test_a_cache_of_the_wrong_shape_is_fetched_again(cache, damage):
    load_catalogue(fetch=recorded)
    path = cache / "catalogue" / "jax.json"
    path.write_text(json.dumps(damage(json.loads(path.read_text()))))
    again = load_catalogue(fetch=recorded)
    assert not again.from_cache and again.get("0.5.0").jaxlib == Version("0.5.0")
    assert load_catalogue(fetch=offline).from_cache  # healed: the next run reads it


@pytest.mark.parametrize("damage", WRONG_SHAPES.values(), ids=WRONG_SHAPES.keys())
def test_offline_a_cache_of_the_wrong_shape_is_one_line_naming_the_file(cache, damage):
    load_catalogue(fetch=recorded)
    path = cache / "catalogue" / "jax.json"
    path.write_text(json.dumps(damage(json.loads(path.read_text()))))
    with pytest.raises(NoNetwork) as caught:
        load_catalogue(fetch=offline)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and "damaged" in message


def test_no_releases_known_says_why_and_what_to_do(cache):
    empty = Catalogue(releases=(), fetched_at=datetime.now(UTC), from_cache=True, stale=False)
    for asked in ("0.5.0", "banana"):
        with pytest.raises(UnknownRelease) as caught:
            empty.get(asked)
        message = str(caught.value)
        assert "no releases are known" in message and "lists none" in message
        assert "--refresh-catalogue" in message


def test_refresh_fetches_however_fresh_the_cache(cache):
    calls = []

    def counting(url):
        calls.append(url)
        return recorded(url)

    load_catalogue(fetch=counting)
    assert load_catalogue(fetch=counting).from_cache and len(calls) == 3
    assert not load_catalogue(fetch=counting, refresh=True).from_cache and len(calls) == 6
