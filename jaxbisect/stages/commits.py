"""``--commits``: the jax commit between a pair of releases that changed the answer
(docs/commits.md). A commit is a candidate like a release (jax's Python at that commit on a
release's environment, ``commit_release``) and is bisected by the same ``bisect_over``, every
step after the search included; what is particular to this level is which environment: the
older release's jaxlib, and where every commit behaves as the older release there, the newer
one's, which says whether the change needs both or came with the jaxlib alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from jaxbisect.lab.catalogue import CommitCandidate, Release
from jaxbisect.lab.jax_history import CommitRange, commit_range, jaxlib_commits
from jaxbisect.lab.lab import Lab
from jaxbisect.search.classify import Label
from jaxbisect.search.comparing import reduce_for
from jaxbisect.search.placing import Say, values_of
from jaxbisect.search.rounds import Status, probe_limit
from jaxbisect.stages.releases import MetricBisection, PairKind, bisect_over


class CameWith(StrEnum):
    """Where the commits say a change between two releases came from: a commit of jax's
    Python (on the older jaxlib), a commit that changes it only on the newer jaxlib (needs
    both), or the newer jaxlib itself (measured both ways)."""

    JAX = "jax"
    BOTH = "both"
    JAXLIB = "jaxlib"


@dataclass(frozen=True)
class NewerSide:
    """The other half of "it came with jaxlib B": jax's Python of the range's commits on B's
    jaxlib (those jax's version check lets run there). ``search`` is None where nothing could
    be searched (``reason``). ``start``: how many of the commits that pass the check came
    before the first that behaves as either release there (the ones before fail, or behave as
    neither: they call an older jaxlib's API)."""

    search: MetricBisection | None
    jaxlib: str
    labels: tuple = ()             # the release classifier's labels of the two commit ends
    start: int = 0
    reason: str | None = None

    @property
    def came_with(self) -> str | None:
        """``both`` (a commit of jax's Python on B's jaxlib: its parent behaves as A there),
        ``jaxlib`` (every commit that runs there behaves as B), or None: cannot tell."""
        if self.search is None:
            return None
        status = self.search.search.status
        if status == Status.FOUND and self.labels in ((), (Label.OLD, Label.NEW)):
            return CameWith.BOTH
        if status == Status.ALIKE and self.labels in ((), (Label.NEW, Label.NEW)) \
                and self.start == 0 \
                and not self.search.came_and_went:
            return CameWith.JAXLIB
        return None

    @property
    def why_not(self) -> str | None:
        """Where it cannot tell: why, in one sentence."""
        if self.came_with is not None:
            return None
        if self.search is None:
            return self.reason
        s, first = self.search.search, self.search.candidates[0].commit
        if self.search.came_and_went:
            return came_and_went_words(self.jaxlib, self.search)
        if s.status == Status.ALIKE and self.labels in ((), (Label.NEW, Label.NEW)):
            return (f"on jaxlib {self.jaxlib}, jax's Python behaves as the newer release from "
                    f"{first.short}, the first commit that behaves as either release there; "
                    f"the {self.start} before it fail or behave as neither, so a jax commit "
                    f"among them that needs the newer jaxlib cannot be ruled out")
        if self.labels and self.labels != (Label.OLD, Label.NEW):
            return (f"on jaxlib {self.jaxlib}, the commit ends behave as {self.labels[0]} and "
                    f"{self.labels[1]} by the release search's classifier, not as the older "
                    f"release then the newer")
        return f"on jaxlib {self.jaxlib}: {s.reason or s.status}"


@dataclass(frozen=True)
class CommitBisection:
    """``--commits``: the release pair's jax commits searched on the older release's
    environment, and, where they all behave as the older release there, on the newer one's
    (``newer``). ``search`` is None where there was nothing to search (``reason``)."""

    span: CommitRange | None
    search: MetricBisection | None
    reason: str | None = None
    ends_as_releases: tuple = ()   # the release classifier's labels of the two commit ends
    unseen: str | None = None      # why an alike answer cannot be the newer jaxlib's
    newer: NewerSide | None = None  # the commits on the newer release's jaxlib
    pair: tuple = ()               # the two releases searched between (Release, Release)
    kind: PairKind = PairKind.CAME  # what the release search named there

    @property
    def status(self) -> str:
        return self.search.search.status if self.search else Status.UNMEASURABLE

    @property
    def older_alike(self) -> bool:
        """Every commit that runs on the older jaxlib behaves as the older release there."""
        return (self.status == Status.ALIKE
                and self.ends_as_releases in ((), (Label.OLD, Label.OLD))
                and self.unseen is None and not self.search.came_and_went)

    @property
    def came_with(self) -> str | None:
        """``jax`` (a commit of jax's Python, on the older jaxlib), ``both`` (a commit of jax's
        Python that changes it only on the newer jaxlib: jax's Python behaves as the older
        release on its own jaxlib throughout, and on the newer jaxlib its commits before the
        first bad one behave as the older release too), ``jaxlib`` (the newer release's
        jaxlib, measured both ways: jax's Python behaves as the older release at every commit
        on the older jaxlib and as the newer one at every commit on the newer jaxlib), or
        None: cannot tell."""
        if self.status == Status.FOUND:
            return CameWith.JAX
        if self.older_alike and self.newer is not None:
            return self.newer.came_with
        return None

    @property
    def why_not(self) -> str | None:
        """Cannot tell: why."""
        if self.came_with is not None:
            return None
        if self.older_alike and self.newer is not None:
            return self.newer.why_not
        if self.search is not None and self.search.came_and_went:
            return came_and_went_words(self.span.jaxlib, self.search)
        return self.reason or self.unseen

    @property
    def deciding(self) -> MetricBisection | None:
        """The search the first bad commit comes from: the newer jaxlib's for ``both``."""
        return self.newer.search if self.came_with == CameWith.BOTH else self.search

    def commit_at(self, index: int):
        return self.search.candidates[index].commit

    @property
    def last_good(self):
        return self._named("last_old")

    @property
    def first_bad(self):
        return self._named("first_new")

    def _named(self, side: str):
        """The commit at the deciding search's ``last_old`` or ``first_new`` (None where no
        jax commit is named)."""
        if self.came_with not in (CameWith.JAX, CameWith.BOTH):
            return None
        d = self.deciding
        return d.candidates[getattr(d.search.result, side)].commit


def came_and_went_words(jaxlib: str, search: MetricBisection) -> str:
    """Why alike commit ends tell nothing: where a change inside them came and went, by the
    commits' short hashes."""
    short = [c.commit.short for c in search.candidates]
    return (f"on jaxlib {jaxlib}, the commit ends agree but jax's Python between them changes "
            f"and changes back: " + "; ".join(
                f"came at {short[c.came[0]]} → {short[c.came[1]]}, went at "
                f"{short[c.went[0]]} → {short[c.went[1]]}" for c in search.interior.changes))


def commit_release(release: Release, commit) -> CommitCandidate:
    """``commit`` of jax as a candidate: its Python on ``release``'s environment."""
    return CommitCandidate.on(release, commit)


SpanOf = Callable[[Release, Release], CommitRange]


def commits_in(repo: Path, say: Say) -> SpanOf:
    """The commits between two releases as ``repo`` holds them (jax_commits.commit_range)."""
    return lambda old, new: commit_range(repo, str(old.version), str(new.version),
                                         str(old.jaxlib), say)


def jaxlib_changes(repo: Path, old: str, new: str) -> dict:
    """For a TPU target's pair: the commits between the two releases that change the jax
    repository's own ``jaxlib/`` C++ (Mosaic, its serialisation), the candidates a build of
    jaxlib would test: the toolkit runs jax's Python only, so it names them and tests none."""
    from jaxbisect.lab.git import GitFailed

    try:
        found = jaxlib_commits(repo, old, new)
    except GitFailed:
        return {"commits": [], "count": None,
                "reason": "jax's history between the releases could not be read"}
    return {"commits": [c.as_json() for c in found], "count": len(found),
            "range": f"jax-v{old}..jax-v{new} -- jaxlib/",
            "reason": "the jax repository's jaxlib/ C++ changed between the releases: a "
                      "change that came with jaxlib is in one of these, which only a jaxlib "
                      "build at each would test" if found else
                      "the jax repository's jaxlib/ did not change between the releases"}


def bisect_commits(b: MetricBisection, span_of: SpanOf, lab: Lab,
                   say: Say, pair: tuple[int, int] | None = None,
                   kind: PairKind = PairKind.CAME) -> CommitBisection:
    """The jax commit between ``b``'s pair of releases that changed the answer, each commit's
    Python run on the older release's environment (its jaxlib), at the size the release
    search measured. Where the last commit that runs there still behaves as the older
    release, the other half: the commits on the newer release's jaxlib, which say whether a
    jax commit changed it only there ("both") or jax's Python behaves as the newer release
    throughout ("jaxlib"). ``span_of(old, new)``: the commits between two releases
    (commits_in: a clone's). ``pair``: the candidates' indices of another pair the release
    search named (a change inside alike ends: where it came, where it went), placed by a
    classifier learned from that pair's own figures."""
    if pair is None and b.pair is None:
        return CommitBisection(None, None, reason="the release search named no pair of "
                                                  "releases to search between")
    old, new = b.pair if pair is None else (b.candidates[pair[0]], b.candidates[pair[1]])
    span = span_of(old, new)
    named = {"pair": (old, new), "kind": kind}
    candidates = [commit_release(old, c) for c in span.candidates]
    if len(candidates) < 2:
        return CommitBisection(span, None, reason=f"no commit after {span.old_tag} runs on "
                                                  f"jaxlib {span.jaxlib}", **named)
    n = len(candidates)
    last = span.candidates[-1]
    say(f"bisecting {n} jax commits, {span.old_tag} … {last.short} (the last that runs on "
        f"jaxlib {span.jaxlib}; {len(span.need_new)} after it need jaxlib {new.jaxlib}), each "
        f"on jax {old.version}'s environment; at most {probe_limit(n, b.request.jobs)[0]} "
        f"probes")
    found = bisect_over(candidates, b.request, b.searched, lab, say, noun="commit")
    search = found.search
    labels = ()
    if search.status in (Status.ALIKE, Status.FOUND) and not b.searched.noisy:
        # The commit ends as the release search's classifier places them: alike ends are the
        # jaxlib's doing only where both behave as the older release; a found change whose
        # new end is neither release's behaviour is said so.
        release_classifier = b.classifier() if pair is None else b.pair_classifier(*pair)
        labels = tuple(release_classifier(search.placed[i].values).label
                       for i in (0, n - 1))
    # Commits after the new end that are not the newer release's own (its preparation, its
    # branch) are jax's Python of releases in between, never run: the jaxlib cannot be
    # named then.
    others = [c for c in span.need_new if c.version != str(new.version)]
    unseen = (f"jax's Python up to {last.short} behaves as jax {old.version} on its jaxlib, "
              f"but {len(others)} commits after it, of jax "
              f"{', '.join(sorted({c.version or '?' for c in others}))}, need a newer jaxlib "
              f"and were not run: search a pair of consecutive releases" if others else None)
    cb = CommitBisection(span, found, ends_as_releases=labels, unseen=unseen, **named)
    if cb.older_alike:  # "it came with jaxlib B" needs the other half: the commits on B's
        cb = replace(cb, newer=on_newer_jaxlib(b, span, new, lab, say, pair))
    return cb


def first_with_a_figure(n: int, has_figure: Callable[[int], bool]) -> int | None:
    """The first of candidates 0 … n-1 that gives a figure, where the ones that do not come
    first (commits early in a range call an older jaxlib's API that the newer one changed):
    0, 1, 3, 7 … tried until one gives a figure, then the gap before it halved. None where
    none before the last does."""
    if has_figure(0):
        return 0
    failed, step = 0, 1
    while True:
        at = min(failed + step, n - 2)  # the last is the newer release's own: not a start
        if at <= failed:
            return None
        if has_figure(at):
            break
        failed, step = at, step * 2
    while at - failed > 1:
        middle_one = (failed + at) // 2
        failed, at = (failed, middle_one) if has_figure(middle_one) else (middle_one, at)
    return at


def on_newer_jaxlib(b: MetricBisection, span: CommitRange, new: Release, lab: Lab,
                    say: Say, pair: tuple[int, int] | None = None) -> NewerSide:
    """jax's Python of the range's commits on the newer release's environment (its jaxlib):
    from the first that behaves as either release there to the last; the search between them
    where they differ (docs/commits.md)."""
    jaxlib = str(new.jaxlib)
    runnable = span.runs_on(jaxlib)
    if len(runnable) < 2:
        return NewerSide(None, jaxlib, reason=f"fewer than two commits of the range pass jax's "
                                              f"version check on jaxlib {jaxlib}")
    candidates = [commit_release(new, c) for c in runnable]
    q = b.searched
    seconds = b.timeout
    # A commit counts from where it behaves as one of the two releases (by the release
    # search's classifier): before that, jax's older Python on the newer jaxlib fails, or
    # raises what neither release raises (an older jaxlib's API), as a third behaviour.
    classifier = (lambda: b.classifier()) if pair is None else \
        (lambda: b.pair_classifier(*pair))  # the pair's own, as on the older jaxlib
    release_classifier = None if q.noisy else classifier()

    def has_figure(i: int) -> bool:
        run = lab.run(candidates[i], b.request.backend, q, 1, timeout=seconds)
        if run.status != "ok":
            return False
        return release_classifier is None or release_classifier(
            values_of([run], reduce_for(q))).label in (Label.OLD, Label.NEW)

    say(f"the other half: jax's Python on jaxlib {jaxlib}, where {len(runnable)} commits of the "
        f"range pass jax's version check; the first that behaves as either release there …")
    start = first_with_a_figure(len(candidates), has_figure)
    if start is None:
        return NewerSide(None, jaxlib, reason=f"no commit before {runnable[-1].short} behaves as "
                                              f"either release on jaxlib {jaxlib}")
    candidates = candidates[start:]
    n = len(candidates)
    say(f"bisecting {n} jax commits, {runnable[start].short} … {runnable[-1].short}, each on "
        f"jax {new.version}'s environment (jaxlib {jaxlib}); at most "
        f"{probe_limit(n, b.request.jobs)[0]} probes")
    found = bisect_over(candidates, b.request, q, lab, say, noun="commit")
    search = found.search
    labels: tuple = ()
    if search.status in (Status.ALIKE, Status.FOUND) and not q.noisy:
        release_classifier = classifier()
        labels = tuple(release_classifier(search.placed[i].values).label
                       for i in (0, n - 1))
    return NewerSide(found, jaxlib, labels=labels, start=start)


