"""The release catalogue: every jax release on PyPI, the jaxlib it runs on, and when both landed.

Built from PyPI's JSON API (jax, jaxlib, jax-cuda12-plugin), cached under
``cache_dir()/catalogue/`` and refreshed when older than ``max_age``. Versions are
``packaging`` Versions throughout; a version string packaging cannot parse is skipped.

Upload times only count the files an installer on *this* machine would use (linux wheels
for ``platform.machine()``, never free-threaded ones): a release's sdist or a late
free-threaded wheel can land days after the release and must not move its date cut-off.
"""

from __future__ import annotations

import json
import platform
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from jaxbisect.errors import NoNetwork, UnknownRelease, UserError
from jaxbisect.files import cache_dir, write_json
from jaxbisect.lab.interpreters import Interpreter, find_interpreters, own

PACKAGES = ("jax", "jaxlib", "jax-cuda12-plugin")
PYPI_JSON = "https://pypi.org/pypi/{}/json"

# Added to the last upload so the cut-off also admits sibling files this catalogue does not
# track (jax-cuda12-pjrt lands minutes after the plugin), while staying far shorter than the
# weeks it takes a new dependency release (numpy 2.0, say) to break an old jax.
CUTOFF_MARGIN = timedelta(days=1)
# A paired jaxlib whose wheels landed this long after the jax release was re-uploaded later
# (jaxlib 0.4.13's are from 2025): a date cut-off admitting it would pull in that year's numpy.
LATE_JAXLIB = timedelta(days=7)

Fetch = Callable[[str], bytes]
# The cache's format: 2 keeps each file's yanked_reason. A cache of another format is read
# (offline it is all there is) but refreshed from PyPI as soon as PyPI answers.
CACHE_FORMAT = 2


@dataclass(frozen=True)
class Release:
    version: Version
    uploaded: datetime  # UTC, last upload of the jax files an installer here would use
    yanked: bool
    requires_python: str | None
    jaxlib: Version | None  # newest non-yanked jaxlib <= version that has wheels
    jaxlib_uploaded: datetime | None
    jaxlib_pythons: frozenset[str]  # cpXY tags of jaxlib's wheels for this machine
    # The CUDA 12 plugin is versioned like jaxlib: the one that pairs is jaxlib's version.
    cuda_plugin: Version | None = None
    cuda_plugin_uploaded: datetime | None = None
    cuda_plugin_pythons: frozenset[str] = frozenset()
    yanked_reason: str | None = None  # PyPI's words, where the release was yanked with some

    # A release is one kind of candidate (CommitCandidate the other): what the lab installs
    # and runs, the store keys and the search places.
    level = "release"
    refused = None  # a release always runs; a commit may be refused by jax (str | None)

    @property
    def environment_release(self) -> Release:
        """The release whose environment this candidate runs in: a release's own."""
        return self

    @contextmanager
    def source(self) -> Iterator[Path | None]:
        """The folder whose ``jax/`` goes first on the path for the ``with`` block: None for a
        release (its own jax)."""
        yield None

    @property
    def key_fields(self) -> dict:
        """What a stored result's key adds for this candidate: nothing for a release."""
        return {}

    @property
    def jax_installed(self) -> dict:
        """What a run's ``installed`` says of jax where it is not the environment's own."""
        return {}

    def prepare(self, python: Path) -> None:
        """Ahead of its run: nothing to do for a release."""

    @property
    def environ(self) -> dict[str, str]:
        """What a run of it adds to its process's environment: nothing for a release."""
        return {}

    @property
    def identity(self) -> tuple[str, str]:
        """What tells one candidate from another: its version and the release whose
        environment it runs in (one jax commit runs on either release's jaxlib)."""
        return str(self.version), str(self.environment_release.version)

    def cutoff(self, backend=None) -> datetime:
        """The ``--exclude-newer`` time that resolves this release's dependencies as of its day
        (``backend``: whatever more its wheels need admitted, backends.Backend.cutoff_times)."""
        times = [self.uploaded, self.jaxlib_uploaded,
                 *(backend.cutoff_times(self) if backend is not None else ())]
        newest = max(t for t in times if t is not None)
        return (newest + CUTOFF_MARGIN).replace(microsecond=0)

    def __str__(self) -> str:
        return f"jax {self.version}"


@dataclass(frozen=True)
class CommitCandidate(Release):
    """A commit of jax between two releases as a candidate: its Python on the environment of
    ``runs_on`` (the release whose fields these are); ``version`` is what jax.__version__ says
    at the commit."""

    commit: object = None  # lab.jax_history.Commit
    runs_on: Version | None = None

    level = "commit"

    @classmethod
    def on(cls, release: Release, commit) -> CommitCandidate:
        """``commit`` of jax as a candidate: its Python on ``release``'s environment."""
        fields = {f.name: getattr(release, f.name) for f in dataclass_fields(Release)}
        return cls(**{**fields, "version": Version(commit.jax_version), "yanked": False,
                      "yanked_reason": None}, commit=commit, runs_on=release.version)

    @property
    def environment_release(self) -> Release:
        fields = {f.name: getattr(self, f.name) for f in dataclass_fields(Release)}
        return Release(**{**fields, "version": self.runs_on})

    @property
    def refused(self) -> str | None:
        """Why this commit cannot run at all (jax's own version check refuses the jaxlib it
        would run on), or None."""
        return self.commit.refused

    @contextmanager
    def source(self) -> Iterator[Path | None]:
        """The commit's checkout, first on the path for the ``with`` block."""
        from jaxbisect.lab.jax_history import checkouts

        with checkouts(Path(self.commit.repo)).at(self.commit.sha) as folder:
            yield folder

    @property
    def key_fields(self) -> dict:
        """The release it runs on (one commit runs on either release's jaxlib)."""
        return {"runs_on": str(self.runs_on)}

    @property
    def jax_installed(self) -> dict:
        return {"jax": str(self.version), "jax_commit": self.commit.sha}

    def prepare(self, python: Path) -> None:
        """Its checkout switched and compiled by ``python`` ahead of its run."""
        if not self.refused:
            from jaxbisect.lab.jax_history import checkouts

            checkouts(Path(self.commit.repo)).prepare(self.commit.sha, python)


@dataclass(frozen=True)
class Catalogue:
    releases: tuple[Release, ...]  # sorted by version, yanked included
    fetched_at: datetime
    from_cache: bool
    stale: bool  # PyPI could not be reached; this is an older cached copy
    unreachable: str | None = None  # why PyPI could not be reached, where it could not

    def get(self, version: str, *, allow_yanked: bool = True) -> Release:
        try:
            wanted = Version(str(version))
        except InvalidVersion:
            span = (f"jax releases run {self.releases[0].version} … "
                    f"{self.releases[-1].version}" if self.releases else self._nearest(None))
            raise UnknownRelease(f"{version!r} is not a version number; {span}") from None
        for release in self.releases:
            if release.version == wanted:
                if release.yanked and not allow_yanked:
                    raise UnknownRelease(f"jax {wanted} was yanked; {self._nearest(wanted)}")
                return release
        raise UnknownRelease(f"jax {wanted} was never released; {self._nearest(wanted)}")

    def _nearest(self, wanted: Version | None) -> str:
        listed = [r.version for r in self.releases if not r.yanked and r.version != wanted]
        below = [v for v in listed if v < wanted]
        above = [v for v in listed if v > wanted]
        near = [str(v) for v in (below[-1:] + above[:1])]
        if near:
            return "nearest releases: " + ", ".join(near)
        return (f"no releases are known: the release catalogue (cached in {_cache_path()}) "
                f"lists none; --refresh-catalogue fetches it from PyPI again")

    def unusable_reason(self, release: Release, backend: str,
                        python: tuple[int, int] | None = None, *,
                        allow_yanked: bool = False) -> str | None:
        """None when ``release`` can be installed here for ``backend``; otherwise why not.
        With ``python`` given, for that Python only; otherwise for any interpreter found here.
        """
        if python is not None:
            return _unusable(release, backend, python, allow_yanked)
        return interpreter_for(release, backend, allow_yanked=allow_yanked)[1]

    def between(self, lo: str, hi: str, backend: str, python: tuple[int, int] | None = None,
                *, include_yanked: bool = False
                ) -> tuple[list[Release], list[tuple[Release, str]]]:
        """Releases from ``lo`` to ``hi`` inclusive, by version: (usable, [(unusable, why)]).

        Yanked releases inside the range are left out (``yanked_between`` names them) unless
        ``include_yanked``; a yanked end is kept only because it was named, and then counts as
        usable if it installs (an exact pin still gets it).
        """
        first, last = self.get(lo), self.get(hi)
        if first.version > last.version:
            raise UserError(f"empty range: {first.version} is newer than {last.version}")
        backend.prepare(r for r in self.releases
                                      if first.version <= r.version <= last.version)
        usable: list[Release] = []
        unusable: list[tuple[Release, str]] = []
        for release in self.releases:
            named = release is first or release is last or include_yanked
            if not first.version <= release.version <= last.version:
                continue
            if release.yanked and not named:
                continue
            why = self.unusable_reason(release, backend, python, allow_yanked=named)
            if why is None:
                usable.append(release)
            else:
                unusable.append((release, why))
        return usable, unusable

    def yanked_between(self, lo: str, hi: str) -> list[Release]:
        """The yanked releases strictly inside ``lo`` … ``hi``: a report names them, since the
        people who installed one before the yank are the ones filing the report."""
        first, last = self.get(lo), self.get(hi)
        return [r for r in self.releases
                if r.yanked and first.version < r.version < last.version]


def yanked_words(release: Release) -> str:
    """A yanked release as a report names it: with PyPI's reason, or saying there is none."""
    reason = (f"PyPI's reason: \"{release.yanked_reason}\"" if release.yanked_reason
              else "PyPI gives no reason")
    return f"jax {release.version} (jaxlib {release.jaxlib or '?'}) was yanked ({reason})"


def _unusable(release: Release, backend: str, python: tuple[int, int],
              allow_yanked: bool) -> str | None:
    """None when ``release`` installs for ``backend`` on this Python; otherwise why not."""
    chosen = backend
    major, minor = python
    tag = f"cp{major}{minor}"
    here = f"linux {platform.machine()}"
    if release.yanked and not allow_yanked:
        return "yanked"
    if why := chosen.unavailable(release):  # first: what the real device would cure
        return why
    if release.requires_python:
        try:
            if f"{major}.{minor}" not in SpecifierSet(release.requires_python):
                return f"requires Python {release.requires_python} (this is {major}.{minor})"
        except InvalidSpecifier:
            pass
    if release.jaxlib is None:
        return "no jaxlib on PyPI pairs with it (PyPI has dropped old jaxlib wheels)"
    if release.jaxlib_uploaded and release.jaxlib_uploaded > release.uploaded + LATE_JAXLIB:
        return (f"its jaxlib {release.jaxlib} was uploaded {release.jaxlib_uploaded:%Y-%m-%d}, "
                f"long after the release: its dependencies cannot be dated")
    if not sys.platform.startswith("linux"):
        return "only linux is supported"
    if tag not in release.jaxlib_pythons:
        return f"no jaxlib {release.jaxlib} wheel for {tag} on {here}"
    return chosen.unusable(release, python)


PYTHON_REASONS = ("requires Python", "wheel for cp")  # what another interpreter may cure


def needs_another_python(why: str) -> bool:
    return why.startswith(PYTHON_REASONS[0]) or PYTHON_REASONS[1] in why


def interpreter_for(release: Release, backend: str, *, allow_yanked: bool = False
                    ) -> tuple[Interpreter | None, str | None]:
    """The interpreter to build ``release``'s environment on (the driver's own when it can),
    or None and why no interpreter found on this machine can."""
    mine = own()
    why = _unusable(release, backend, mine.version, allow_yanked)
    if why is None:
        return mine, None
    if not needs_another_python(why):
        return None, why
    found = find_interpreters()
    for other in found[1:]:
        if _unusable(release, backend, other.version, allow_yanked) is None:
            return other, None
    return None, f"{why}; Pythons found here: {', '.join(map(str, found))}"


def load_catalogue(
    *, refresh: bool = False, max_age: timedelta = timedelta(hours=6), fetch: Fetch | None = None
) -> Catalogue:
    """The catalogue from cache when fresh, else from PyPI; an old cache when PyPI is down."""
    now = datetime.now(UTC)
    cached, damaged, current = _read_cache()
    if cached and not refresh and now - _oldest(cached) <= max_age and current:
        return _build(cached, from_cache=True, stale=False)
    try:
        documents = {name: trim(json.loads((fetch or _urlopen)(PYPI_JSON.format(name))))
                     for name in PACKAGES}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        # URLError is an OSError; the others: PyPI answered something of another shape
        if damaged:
            raise NoNetwork(
                f"cannot reach PyPI ({_describe(error)}) and the cached release catalogue "
                f"{damaged} is damaged; connect once to fetch it again"
            ) from None
        if not cached:
            raise NoNetwork(
                f"cannot reach PyPI ({_describe(error)}) and no release catalogue is cached "
                f"in {_cache_path()}; connect once to fill it", cause=_describe(error)
            ) from None
        print(f"warning: cannot reach PyPI ({_describe(error)}); using the release catalogue "
              f"cached {_oldest(cached):%Y-%m-%d %H:%M} UTC", file=sys.stderr)
        return replace(_build(cached, from_cache=True, stale=True),
                       unreachable=_describe(error))
    for name, doc in documents.items():
        write_json(_cache_path() / f"{name}.json",
                   {"format": CACHE_FORMAT, "fetched_at": _iso(now), "pypi": doc})
    return _build({name: (now, _versions(doc)) for name, doc in documents.items()},
                  from_cache=False, stale=False)


def installed_here() -> str | None:
    """The jax this Python holds (its metadata read, never imported), or None."""
    from importlib import metadata

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def offline_line(asked: str, cause: str, *, catalogue: bool = True) -> str:
    """The one line for releases that cannot be installed because no package index answers
    (an accelerator VM, an air-gapped cluster): which, why, and what can be measured here
    instead."""
    jax = installed_here()
    here = (f"; this Python has jax {jax}: python -m repro measures it in place" if jax
            else "")
    return (f"cannot install {asked} here: no package index is reachable ({cause})"
            + ("" if catalogue else " and no release catalogue is cached") + here)


def catalogue_for(asked: str, refresh: bool = False) -> Catalogue:
    """The release catalogue for a run that asks for ``asked`` ("jax 0.5.0 … 0.10.2"); where
    no index answers and none is cached, the one line that says which releases cannot be
    installed and why."""
    try:
        return load_catalogue(refresh=refresh)
    except NoNetwork as exc:
        if not exc.cause:  # a damaged cache: its own words
            raise
        raise NoNetwork(offline_line(asked, exc.cause, catalogue=False)) from None


def trim(document: dict) -> dict:
    """Keep only what the catalogue reads from a PyPI JSON response (it is also the cache)."""
    keep = ("filename", "upload_time_iso_8601", "yanked", "yanked_reason", "requires_python")
    return {
        "info": {"name": document["info"]["name"]},
        "releases": {
            version: [{key: f.get(key) for key in keep} for f in files]
            for version, files in document["releases"].items()
        },
    }


def _urlopen(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return response.read()


def _describe(error: BaseException) -> str:
    return str(getattr(error, "reason", None) or error) or type(error).__name__


def _cache_path() -> Path:
    return cache_dir() / "catalogue"


def _read_cache() -> tuple[dict[str, tuple[datetime, Versions]] | None, Path | None, bool]:
    """Every package's cached versions with their fetch time (None unless all are usable), the
    first file that is there but damaged (not JSON, or JSON of another shape), and whether
    every file is of this CACHE_FORMAT."""
    cached, current = {}, True
    for name in PACKAGES:
        path = _cache_path() / f"{name}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None, None, False
        try:
            entry = json.loads(text)
            versions = _versions(entry["pypi"])  # raises on a document of another shape
            if name == "jax" and not versions:
                raise ValueError("jax lists no releases")
            cached[name] = (_parse_time(entry["fetched_at"]), versions)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, path, False
        current = current and entry.get("format") == CACHE_FORMAT
    return cached, None, current


def _oldest(cached: dict[str, tuple[datetime, Versions]]) -> datetime:
    return min(fetched for fetched, _ in cached.values())


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class _Files:
    """One version of one package, as the catalogue needs it."""

    yanked: bool
    yanked_reason: str | None
    requires_python: str | None
    has_wheels: bool
    uploaded: datetime | None  # last upload of the files used here
    pythons: frozenset[str]  # cpXY tags of this machine's platform wheels


def _summarise(files: list[dict]) -> _Files:
    machine = platform.machine().lower()
    wheels, usable, pythons = [], [], set()
    for f in files:
        try:
            *_, tags = parse_wheel_filename(f["filename"])
        except (InvalidWheelFilename, InvalidVersion):
            continue  # an sdist, or a wheel name packaging rejects
        wheels.append(f)
        for tag in tags:
            if tag.abi.endswith("t"):  # free-threaded (cp313t): never installed here
                continue
            if tag.platform == "any" or (
                "linux" in tag.platform and tag.platform.endswith("_" + machine)
            ):
                usable.append(f)
                if tag.interpreter.startswith("cp"):
                    pythons.add(tag.interpreter)
    times = [_parse_time(f["upload_time_iso_8601"]) for f in (usable or wheels or files)]
    requires = next((f["requires_python"] for f in (wheels or files) if f["requires_python"]),
                    None)
    yanked = bool(files) and all(f["yanked"] for f in files)
    return _Files(
        yanked=yanked,
        yanked_reason=next((f.get("yanked_reason") for f in files
                            if f.get("yanked_reason")), None) if yanked else None,
        requires_python=requires,
        has_wheels=bool(wheels),
        uploaded=max(times) if times else None,
        pythons=frozenset(pythons),
    )


Versions = dict[Version, _Files]  # a package's versions, as the catalogue reads them


def _versions(document: dict) -> Versions:
    parsed = {}
    for text, files in document["releases"].items():
        if not files:
            continue
        try:
            parsed[Version(text)] = _summarise(files)
        except InvalidVersion:
            continue
    return dict(sorted(parsed.items()))


def _build(cached: dict[str, tuple[datetime, Versions]], *, from_cache: bool,
           stale: bool) -> Catalogue:
    jax = cached["jax"][1]
    jaxlibs = {v: f for v, f in cached["jaxlib"][1].items() if f.has_wheels}
    plugins = cached["jax-cuda12-plugin"][1]
    releases = []
    for version, files in jax.items():
        # A yanked jax (asked for by name) keeps its own yanked jaxlib: 0.4.32 needs 0.4.32.
        paired = [(v, f) for v, f in jaxlibs.items()
                  if v <= version and (not f.yanked or (files.yanked and v == version))]
        jaxlib, lib = paired[-1] if paired else (None, None)
        plugin = plugins.get(jaxlib) if jaxlib is not None else None
        if plugin is not None and plugin.yanked and not files.yanked:
            plugin = None
        releases.append(Release(
            version=version,
            uploaded=files.uploaded,
            yanked=files.yanked,
            requires_python=files.requires_python,
            jaxlib=jaxlib,
            jaxlib_uploaded=lib.uploaded if lib else None,
            jaxlib_pythons=lib.pythons if lib else frozenset(),
            cuda_plugin=jaxlib if plugin else None,
            cuda_plugin_uploaded=plugin.uploaded if plugin else None,
            cuda_plugin_pythons=plugin.pythons if plugin else frozenset(),
            yanked_reason=files.yanked_reason,
        ))
    return Catalogue(tuple(releases), _oldest(cached), from_cache=from_cache, stale=stale)

