"""libtpu, the third part of a TPU release: once a TPU change is placed between two releases,
the swaps (each release's jax and jaxlib with the other's libtpu) say which part it came with
(search/tpu_parts.py); a change that came with libtpu is narrowed, the old jax and jaxlib held
(one that needs both: the new ones), over every libtpu release on PyPI between the two pins
(releases no jax pins among them), by the same bisection (``bisect_over``, a libtpu release a
candidate: catalogue.LibtpuCandidate), to the first libtpu that shows it. libtpu is closed
source: its release is the finest level.

The document's ``libtpu`` part (:func:`libtpu_part`); rendered by report/markdown/tpu.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from packaging.version import InvalidVersion, Version

from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.lab import Lab
from jaxbisect.lab.libtpu_candidate import LibtpuCandidate
from jaxbisect.search.classify import Label
from jaxbisect.search.comparing import batch_size, classifier_for, reduce_for
from jaxbisect.search.placing import no_figure, values_of
from jaxbisect.search.question import Run
from jaxbisect.search.rounds import Status
from jaxbisect.search.tpu_parts import Part, Seen, part_of
from jaxbisect.stages.releases import MetricBisection, bisect_over

Say = Callable[[str], None]
FINEST = ("libtpu is closed source: its release is the finest level there is (no commits to "
          "bisect below it)")


def tpu_target(question) -> bool:
    """Whether ``question`` compiles for a TPU target (a chip's or a topology's)."""
    target = getattr(question, "target", "")  # a test's stand-in question may have none
    if not target:
        return False
    from repro.target import TargetError
    from repro.target import load as load_target

    try:
        return load_target(target).kind == "tpu"
    except TargetError:
        return False


def _pair(b: MetricBisection) -> tuple[Release, Release] | None:
    result = b.search.result
    if b.search.status != Status.FOUND or result is None or not result.exact:
        return None
    old, new = b.candidates[result.last_old], b.candidates[result.first_new]
    return (old, new) if old.level == new.level == "release" else None


def libtpu_part(b: MetricBisection, lab: Lab, say: Say, *,
                libtpu_of: Callable[[Release], str | None] | None = None,
                listed: Callable[[], Sequence[str] | None] | None = None) -> dict | None:
    """The swaps at ``b``'s pair and what they say, and for a change that came with libtpu the
    first libtpu release that shows it; None where ``b`` found no pair of releases for a TPU
    target. ``libtpu_of``: the libtpu a release's environment installs (the backend's);
    ``listed``: libtpu's releases on PyPI (the backend's list)."""
    request, q = b.request, b.request.question
    pair = _pair(b)
    if pair is None or not tpu_target(q):
        return None
    backend = request.backend
    libtpu_of = libtpu_of or (lambda r: getattr(backend, "libtpu", lambda _: (None, None))(r)[0])
    listed = listed or (lambda: [v for v, e in (getattr(getattr(backend, "pins", None),
                                                        "releases", lambda: None)() or {}).items()
                                 if not e.get("yanked")])
    old, new = pair
    lo, ln = libtpu_of(old), libtpu_of(new)
    ends = {"old": _parts(old, lo), "new": _parts(new, ln)}
    if lo is None or ln is None:
        return {**ends, "swaps": [], "part": Part.CANNOT_TELL,
                "reason": "the libtpu of each release is not known here", "narrowed": None}
    if lo == ln:
        return {**ends, "swaps": [], "part": Part.JAX,
                "reason": f"both releases load libtpu {lo}", "narrowed": None}
    if q.noisy:
        return {**ends, "swaps": [], "part": Part.CANNOT_TELL,
                "reason": "a noisy metric's swaps are not measured", "narrowed": None}
    result = b.search.result
    placed = b.search.placed
    reduce = reduce_for(q)
    old_values = placed[result.last_old].values or values_of(placed[result.last_old].runs,
                                                             reduce)
    new_values = placed[result.first_new].values or values_of(placed[result.first_new].runs,
                                                              reduce)
    classify = classifier_for(q, request.threshold)(old_values, new_values)
    timeout = (b.time_limit.seconds if b.time_limit else None) or request.timeout or 600.0
    swaps = []
    for release, libtpu in ((old, ln), (new, lo)):
        candidate = LibtpuCandidate.on(release, libtpu)
        say(f"jax {release.version} with libtpu {libtpu} (the other release's): "
            f"{q.metric} of {q.label}")
        runs = [lab.run(candidate, backend, q, k, timeout=timeout)
                for k in range(1, batch_size(q) + 1)]
        swaps.append(_swap(candidate, runs, classify, reduce))
    decided = part_of(Seen(swaps[0]["seen"]), Seen(swaps[1]["seen"]))
    part = {**ends, "swaps": swaps, "part": decided.part, "reason": decided.reason,
            "narrowed": None}
    if decided.part in (Part.LIBTPU, Part.BOTH):  # with the jax and jaxlib that show it
        held = old if decided.part is Part.LIBTPU else new
        part["narrowed"] = narrowed(b, held, lo, ln, listed() or (), lab, say)
    return part


def _parts(release: Release, libtpu: str | None) -> dict:
    return {"jax": str(release.version), "jaxlib": str(release.jaxlib), "libtpu": libtpu}


def _swap(candidate: LibtpuCandidate, runs: Sequence[Run], classify, reduce) -> dict:
    values = values_of(runs, reduce)
    placement = classify(values) if values else no_figure(runs)
    seen = (Seen.THIRD if placement.third else
            {Label.OLD: Seen.OLD, Label.NEW: Seen.NEW}.get(placement.label, Seen.NO_FIGURE))
    return {"jax": str(candidate.runs_on), "jaxlib": str(candidate.jaxlib),
            "libtpu": candidate.libtpu, "install": candidate.install_line, "seen": seen,
            "figure": values[0] if values else None, "reason": placement.reason}


def between(lo: str, ln: str, listed: Sequence[str]) -> list[str]:
    """libtpu's releases from ``lo`` to ``ln`` (both in), in version order: PyPI's list,
    releases no jax pins among them (0.0.27 and 0.0.29 between 0.0.24 and 0.0.30)."""
    def version(text: str) -> Version | None:
        try:
            return Version(text)
        except InvalidVersion:
            return None
    low, high = sorted((Version(lo), Version(ln)))
    inside = {str(v) for t in listed if (v := version(t)) is not None and low < v < high}
    return sorted({lo, ln, *inside}, key=Version)


def narrowed(b: MetricBisection, held: Release, lo: str, ln: str, listed: Sequence[str],
             lab: Lab, say: Say) -> dict:
    """The first libtpu release that shows the change, ``held``'s jax and jaxlib held (the
    old release's for a change that came with libtpu, the new one's for one that needs
    both), by the same bisection over libtpu releases as candidates."""
    versions = between(lo, ln, listed)
    candidates = [LibtpuCandidate.on(held, v) for v in versions]
    say(f"narrowing libtpu {lo} … {ln} ({len(versions)} releases on PyPI) under jax "
        f"{held.version} and jaxlib {held.jaxlib}")
    over = bisect_over(candidates, b.request, b.request.question, lab, say, noun="libtpu")
    result = over.search.result
    found = over.search.status == Status.FOUND and result is not None
    part = {"held": {"jax": str(held.version), "jaxlib": str(held.jaxlib)},
            "candidates": versions, "status": str(over.search.status),
            "skipped": [versions[i] for i in (result.skipped if result else ())],
            "finest": FINEST, "last_old": None, "first_new": None, "exact": False,
            "install": None}
    if found:
        last, first = candidates[result.last_old], candidates[result.first_new]
        part.update(last_old=last.libtpu, first_new=first.libtpu, exact=result.exact,
                    install={"old": last.install_line, "new": first.install_line})
    return part
