"""The evidence steps, run through the lab once a change is placed: each end's dumps
(``python -m repro --case … --hlo-out DIR``) handed to ``where`` for the attribution, the XLA
flags whose defaults changed between the pair tested one at a time (``--explain``), the flags
a user asks to try (``--try-xla-flags``), and the HLO passes that changed the module."""

from __future__ import annotations

import math
import re
import shlex
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from jaxbisect.errors import InstallFailed
from jaxbisect.evidence.collect import case_dumps, dump_params, modules_point, with_modules
from jaxbisect.evidence.flags import FlagChange, changed_defaults, relevant_to, search_flags
from jaxbisect.evidence.handoff import triage_handoff
from jaxbisect.evidence.passes import first_difference, is_safe, passes_that_changed
from jaxbisect.evidence.pin_ranges import github, release_pins
from jaxbisect.evidence.where import where_the_change_is
from jaxbisect.files import display_path
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.harness import HarnessFailed, run_repro
from jaxbisect.lab.known_flags import xla_flag_list
from jaxbisect.lab.lab import Lab, Say
from jaxbisect.lab.machine import parallel_runs
from jaxbisect.lab.pins import load_table
from jaxbisect.lab.runs import store_key
from jaxbisect.lab.store import COMPLETE
from jaxbisect.search.budgets import Deadline, explain_limit
from jaxbisect.search.classify import Direction, Label, Placement
from jaxbisect.search.comparing import (
    MAX_RUNS_NOISY,
    batch_size,
    compare_settings,
    middle,
    paired_test,
    reduce_for,
)
from jaxbisect.search.crashes import is_crash
from jaxbisect.search.placing import Behaviour, Verdict, run_figure, values_of
from jaxbisect.search.question import Question, series_of
from jaxbisect.stages.releases import MetricBisection
from repro.dumps import MODULE_NAME
from repro.process import join_flags
from repro.xla_passes import pass_dumps as read_pass_dumps


def modules_folder(lab: Lab, release: Release, backend: str, question: Question, kind: str,
                   *, timeout: float, say: Say) -> Path:
    """The stored folder of the case's modules under ``release`` (``kind`` "hlo": the lowered
    and optimized modules; "passes": with the module after every HLO pass), written once."""
    def make(folder: Path) -> None:
        env = lab.environment(release, backend)
        say(f"jax {release.version}: " + (
            f"dumping {question.label}'s module after every HLO pass" if kind == "passes"
            else f"lowering and compiling {question.label} for the modules"))
        argv = question.harness_argv()
        # A shape's modules at one of its values, compiled only (a run at every value of
        # a memory case can need more memory than the machine has).
        argv[argv.index("--metric") + 1] = ("memory" if question.target or question.over
                                            else "error")
        passes = ["--pass-dumps", str(folder)] if kind == "passes" else []
        run_repro(env, [*argv, "--hlo-out", str(folder), *passes], timeout, answers=(0, 125))

    return lab.store.get_or_make_folder(store_key(question, release, backend, kind), make,
                                        remeasure=lab.remeasure)


def hlo_texts(lab: Lab, release: Release, backend: str, question: Question, *,
              timeout: float, say: Say, dumps: Callable[[Release], dict] | None = None
              ) -> dict:
    """The case's lowered and optimized modules under ``release`` (stored once written).
    ``dumps``: the release's XLA dumps of the case (evidence.collect.case_dumps), whose
    document holds the same two texts where it was made at the same point: read there
    rather than compiled again, unless the modules are stored already."""
    stored = (lab.store.folder(store_key(question, release, backend, "hlo")) / COMPLETE).exists()
    if dumps is not None and not stored:
        doc = dumps(release)
        modules = doc.get("modules") or {}
        if modules.get("params") == modules_point(question) and modules.get("lowered"):
            return {"lowered": modules["lowered"], "optimized": modules.get("optimized")}
    folder = modules_folder(lab, release, backend, question, "hlo", timeout=timeout, say=say)
    paths = {name: folder / f"{name}.txt" for name in ("lowered", "optimized")}
    return {name: path.read_text(encoding="utf-8") if path.exists() else None
            for name, path in paths.items()}


def table_figure(q: Question, placed) -> float:
    """The scalar figure the report's table shows for a release: the median of what its row
    shows (report/figures.py's figure over seen: a noisy case's one figure a run, else every
    sample)."""
    shown = placed.values if q.noisy and q.case is not None and placed.values else placed.samples
    return statistics.median(float(v) for v in shown)


def no_figure_reason(runs) -> str | None:
    """Why a setting gave no figure: the first failed run's crash or error, its first line
    (None where no run recorded one)."""
    failed = next((r for r in runs if r.status != "ok" and (r.crash or r.error)), None)
    if failed is None:
        return None
    if failed.crash:  # its own words: "crashed: SIGABRT"
        return failed.crash.strip().splitlines()[0]
    said = failed.error.strip().splitlines()
    return f"{failed.status}: {said[0]}" if said else None


def check_argv(b: MetricBisection) -> list[str] | None:
    """The case's own check for commit-level triage: exit 0 nearer the old release's figure,
    1 nearer the new one's (``python -m repro --case … --check OLD NEW``)."""
    q, s = b.searched, b.search
    if q.case is None or q.metric == "output":
        return None
    figures = []
    for i in (s.result.last_old, s.result.first_new):
        samples = s.placed[i].samples
        # A scalar's check figure is the one the report's table shows for the release (its
        # probe's median of what the row shows), not another median of the raw samples.
        figures.append(str(samples[0]) if q.metric == "error" else samples[0][0] if q.over else
                       f"{table_figure(q, s.placed[i]):.6g}")
    # The backend named: in NVIDIA's GPU containers the harness's own default is the GPU.
    argv = [a for a in q.harness_argv() if a != "--json"] + \
        b.request.backend.harness_args(q.target)
    argv[argv.index("--case") + 1] = display_path(q.case.path)
    if q.metric == "error" and any(is_crash(f) for f in figures):
        # A crashed process cannot answer --check itself, and git bisect run stops at an
        # exit status of 128 or more: the shell reads the crash and answers 0 or 1.
        crashing_side = "new" if is_crash(figures[1]) else "old"
        run = shlex.join(["python", "-m", "repro", *argv, "--json"])
        test = "test $? -lt 128" if crashing_side == "new" else "test $? -ge 128"
        return ["sh", "-c", f"{run} > /dev/null 2>&1; {test}"]
    return ["python", "-m", "repro", *argv, "--check", *figures]


def attribution(b: MetricBisection, lab: Lab, say: Say, *, jax_repo: Path | None = None,
                xla_repo: Path | None = None) -> dict:
    """``lowering`` and ``optimized_hlo`` (identical | changed/differs | unknown), the
    ``culprit`` (jax | xla | below-hlo | unknown) in words, and the commit range."""
    q = b.searched
    old, new = b.pair
    s = b.search
    docs = [next((r.document for r in s.placed[i].runs if r.document), None)
            for i in (s.result.last_old, s.result.first_new)]
    commits = release_pins(*[{**d, "status": "ok"} if d else None for d in docs],
                           jax_repo=jax_repo, fetch=github, table=load_table(),
                           xla_repo=xla_repo)
    test = check_argv(b)
    commits["triage"] = triage_handoff(commits, test) if test else None
    unknown = {"lowering": "unknown", "optimized_hlo": None, "culprit": "unknown", **commits}
    if q.case is None:
        return {**unknown, "text": "a command's program is not known to the toolkit: its "
                                   "modules were not compared"}
    dumps = None
    if with_modules(q) is not None:
        # A memory case's XLA dumps (the buffers at the peak) write its modules too: one
        # process an end for both.
        params = dump_params(b)
        dumps = lambda r: case_dumps(lab, r, b.request.backend, q, params,  # noqa: E731
                                     timeout=b.timeout, say=say)
    try:
        texts = both(lambda r: hlo_texts(lab, r, b.request.backend, q, timeout=b.timeout,
                                         say=say, dumps=dumps), (old, new))
    except (InstallFailed, HarnessFailed) as exc:
        return {**unknown, "text": f"the modules could not be made: {exc}"}
    return {**where_the_change_is(texts[0]["lowered"], texts[1]["lowered"],
                                  texts[0]["optimized"], texts[1]["optimized"]), **commits}


def both(make: Callable, releases) -> list:
    """``make`` of each of the pair's releases, at once where the machine holds two runs
    (modules and flag lists do not depend on its load)."""
    with ThreadPoolExecutor(max_workers=min(2, parallel_runs())) as pool:
        return list(pool.map(make, releases))


def nothing(text: str) -> dict:
    """A search's answer where it names nothing, and why."""
    return {"kind": "none", "name": None, "tests": [], "text": text}



def _baseline_seconds(b: MetricBisection, release: Release) -> list[float]:
    """The seconds of the bisection's own runs of ``release`` that gave an answer."""
    index = next((i for i, c in enumerate(b.candidates) if c.version == release.version), None)
    placed = b.search.placed.get(index) if index is not None else None
    return [r.seconds for r in (placed.runs if placed else ()) if r.status in ("ok", "raised")
            and r.seconds]


# Where a noisy metric's test measures the pair beside it: each test its own block of the
# pair's run numbers (stored, so a rerun reads them back), flag tests first, then passes.
FLAG_TESTS, PASS_TESTS, TRIED_FLAGS = 0, 1000, 2000


def behaviour_under(b: MetricBisection, lab: Lab, classify, release: Release, extra_flags: str,
                    say: Say, *, deadline: Deadline | None = None, test: str = "",
                    beside: int = 0) -> dict:
    """The case's metric under ``release`` with ``extra_flags`` added, placed by the
    bisection's classifier (measured again while it cannot place it, up to the cap):
    ``behaviour`` old | new | third | skip | much slower (a run past ``TEST_FACTOR`` times the
    release's own; the rest of the test is not run) | not tested (``deadline`` spent) | cannot
    tell (a noisy metric the paired test could not place), with the ``figure``, the ``error``
    that left it without one, and the runs made. A noisy metric is placed as the search
    places a probe: in rounds (the pair's old release, this setting, the pair's new release)
    made one after the other, by the paired test; ``beside``: this test's block of the pair's
    run numbers."""
    req, q = b.request, b.searched
    asked = replace(q, xla_flags=join_flags(q.xla_flags, extra_flags))
    batch = batch_size(q, req.runs)
    most = max(batch, req.max_runs or (MAX_RUNS_NOISY if q.noisy else 1))
    reduce, runs = reduce_for(q), []
    baseline = _baseline_seconds(b, release)
    limit = explain_limit(req.timeout, baseline)

    def answer(behaviour: Behaviour, error: str | None, **more) -> dict:
        return {"release": str(release.version), "xla_flags": extra_flags, "figure": None,
                "error": error, "runs": len(runs), "limit": limit.as_json(),
                "behaviour": behaviour, **more}

    def seconds_left() -> float:
        return limit.seconds if deadline is None else min(limit.seconds, max(deadline.left, 1.0))

    def hung() -> dict:
        if seconds_left() < limit.seconds:  # cut short by the budget, not by the bound
            return answer(Behaviour.NOT_TESTED, "the explanation's budget ran out during it")
        typical = statistics.median(baseline) if baseline else None
        return answer(Behaviour.MUCH_SLOWER, f"a run went past {limit.seconds:.0f} s" + (
            f" (its runs without it: {typical:.1f} s)" if typical else ""),
            finding="makes the case much slower: this setting matters")

    if q.noisy:
        return _placed_in_rounds(b, lab, release, asked, runs, answer, hung, seconds_left,
                                 say, deadline=deadline, test=test, beside=beside)
    while True:
        for _ in range(batch):
            if deadline is not None and deadline.spent:
                return answer(Behaviour.NOT_TESTED, "the explanation's budget was spent")
            say(f"explain: {extra_flags} under jax {release.version}"
                f"{f' ({test}, ' if test else ' ('}run {len(runs) + 1} of {batch})")
            run = lab.run(release, req.backend, asked, len(runs) + 1, timeout=seconds_left())
            runs.append(run)
            if run.status == "hung":
                return hung()
        values = values_of(runs, reduce)
        if not values:
            failure = next((r for r in runs if r.status != "ok"), None)
            return answer(Behaviour.SKIP, failure.error if failure else "no samples")
        placement = classify(values)
        if placement.label is not Label.AMBIGUOUS or len(runs) + batch > most:
            return placed_answer(answer, placement, middle(values))


def _placed_in_rounds(b: MetricBisection, lab: Lab, release: Release, asked: Question,
                      runs: list, answer, hung, seconds_left, say: Say, *,
                      deadline: Deadline | None, test: str, beside: int) -> dict:
    """A noisy metric's setting placed by the paired test, in rounds (the pair's old release,
    the setting, the pair's new release) until it places it or the cap is spent: then
    "cannot tell", never a behaviour."""
    req, s = b.request, b.search
    paired = paired_test(req.threshold)
    cap = max(req.max_runs or MAX_RUNS_NOISY, paired.first_place)
    reduce = reduce_for(b.searched)
    old, new = b.pair
    numbered = {r: len(s.placed[i].runs) + beside * cap
                for r, i in ((old, s.result.last_old), (new, s.result.first_new))}
    rounds: list[tuple[float, float, float]] = []
    placement = None
    for k in range(1, cap + 1):
        order = [("old", old, b.searched, numbered[old] + k), ("it", release, asked, k),
                 ("new", new, b.searched, numbered[new] + k)]
        got = {}
        for side, r, question, number in order if k % 2 else order[::-1]:
            if deadline is not None and deadline.spent:
                return answer(Behaviour.NOT_TESTED, "the explanation's budget was spent")
            say(f"explain: {asked.xla_flags} under jax {release.version}"
                f"{f' ({test}, ' if test else ' ('}round {k} of at most {cap})")
            run = lab.run(r, req.backend, question, number, timeout=seconds_left())
            if side == "it":
                runs.append(run)
                if run.status == "hung":
                    return hung()
            got[side] = run_figure(run, reduce)
        if got["it"] is None and len(runs) == 1:
            return answer(Behaviour.SKIP, runs[0].error or "no figure")
        if None not in got.values():
            rounds.append((got["old"], got["it"], got["new"]))
        placement = paired.place(rounds, s.ends.direction, None, s.ends.ratio, cap=cap)
        if placement.label is not Label.AMBIGUOUS:
            break
    figure = middle(values_of(runs, reduce))
    if placement is None or placement.label is Label.AMBIGUOUS:
        return answer(Behaviour.CANNOT_TELL, f"the paired test could not place it in {len(rounds)} "
                      f"rounds" + (f" ({placement.reason})" if placement else ""),
                      figure=figure)
    return placed_answer(answer, placement, figure)


def placed_answer(answer: Callable[..., dict], placement: Placement, figure) -> dict:
    """A setting's test answered with its placement: old or new, else why not (a third
    behaviour, a skip)."""
    behaviour = Behaviour.of(placement)
    return answer(behaviour, None if behaviour in (Behaviour.OLD, Behaviour.NEW)
                  else placement.reason, figure=figure)


# A setting's test that told nothing of the metric: no figure, undecided, never run.
UNTOLD = (Behaviour.SKIP, Behaviour.CANNOT_TELL, Behaviour.NOT_TESTED)
_UNTOLD_WORDS = {Behaviour.SKIP: "gave no figure (skip)",
                 Behaviour.CANNOT_TELL: "could not be placed (cannot tell)",
                 Behaviour.NOT_TESTED: "were not tested (the explanation's budget was spent)"}


def untold_words(untold: list[dict]) -> str:
    """How many settings told nothing, and why: "2 settings gave no figure (skip) and 1 …"."""
    counts = {b: sum(t.get("behaviour") == b for t in untold) for b in UNTOLD}
    parts = [f"{n} setting{'s' if n != 1 else ''} {_UNTOLD_WORDS[b]}"
             for b, n in counts.items() if n]
    return " and ".join(parts)


def none_brought_words(n: int, on: str, paired: bool, verb: str = "brings") -> str:
    """The changed defaults set back, none bringing the old figure back, counted as read:
    ``the one changed default that can matter on A6000, set back, does not bring``; ``none
    of the 3 …, set back one at a time (or in pairs), brings``: "in pairs" only where pairs
    were measured (two or more defaults, few enough to pair)."""
    if n == 1:
        return (f"the one changed default that can matter on {on}, set back, "
                f"{'does not bring' if verb == 'brings' else 'did not bring'}")
    return (f"none of the {n} changed defaults that can matter on {on}, set back one at a "
            f"time{' (or in pairs)' if paired else ''}, {verb}")


def explain_flags(b: MetricBisection, lab: Lab, say: Say, *, deadline: Deadline | None = None,
                  progress: Callable[[dict], None] = lambda doc: None) -> dict:
    """The XLA flags whose defaults changed between the pair, each set back in the new release
    and measured with the case's own metric and classifier; one that brings back the old
    behaviour is then set forward in the old release (proof both ways). Every setting that
    brings back the old behaviour is a workaround, whether or not the reverse could be tested
    (``reverse``: what the old release did with it, and why it gave no figure)."""
    req, q = b.request, b.searched
    old, new = b.pair
    sides = {"old": old, "new": new}
    classify = b.classifier()
    try:
        lists = dict(zip(sides, both(lambda r: xla_flag_list(lab, r, req.backend,
                                                             timeout=b.timeout),
                                     sides.values())))
    except Exception as exc:  # an environment, a release without XLA_FLAGS=--help
        return nothing(f"the XLA flags could not be listed: {exc}")
    changes = [c for c in changed_defaults(lists["old"], lists["new"])
               if relevant_to(req.backend, c.name)]
    on = req.backend.words(q.target)  # never an internal key
    say(f"{len(changes)} XLA flag defaults changed between jax {old.version} and "
        f"{new.version} that can matter on {on}; measuring {q.metric} with each set "
        f"back")
    made: dict[tuple[str, str], dict] = {}
    defaults = [{"name": c.name, "old": c.old, "new": c.new} for c in changes]

    def test(side: str, flags: tuple[FlagChange, ...]) -> Behaviour:
        setting = " ".join(f.setting(side) for f in flags)
        made[(side, setting)] = behaviour_under(
            b, lab, classify, sides[side], setting, say, deadline=deadline,
            test=f"flag test {len(made) + 1}; {len(changes)} defaults changed",
            beside=FLAG_TESTS + len(made))
        progress({**nothing("The flag search is under way."), "tests": list(made.values()),
                  "flag_defaults_changed": defaults})
        return made[(side, setting)]["behaviour"]

    search = search_flags(changes, test, Behaviour.OLD, Behaviour.NEW)
    tests = [made.get((t.release, t.xla_flags)) or
             {"release": str(sides[t.release].version), "xla_flags": t.xla_flags,
              "behaviour": t.verdict} for t in search.tests]
    workarounds = []
    for flags in search.restoring:
        back = made[("new", " ".join(f.setting("new") for f in flags))]
        reverse = made.get(("old", " ".join(f.setting("old") for f in flags)))
        workarounds.append({
            "release": str(new.version), "xla_flags": back["xla_flags"],
            "figure": back["figure"],
            "reverse": ({"release": str(old.version), "xla_flags": reverse["xla_flags"],
                         "tested": reverse["behaviour"] in (Behaviour.OLD, Behaviour.NEW,
                                                             Behaviour.THIRD),
                         "behaviour": reverse["behaviour"], "figure": reverse["figure"],
                         "error": reverse["error"]} if reverse else
                        {"release": str(old.version), "tested": False, "behaviour": None,
                         "error": "not run"})})
    untested = sum(t.get("behaviour") == Behaviour.NOT_TESTED for t in tests)
    untold = [t for t in tests if t.get("behaviour") in UNTOLD]
    base = {"flag_defaults_changed": defaults, "tests": tests, "workarounds": workarounds,
            "not_tested": untested, "cannot_tell": len(untold)}
    spent = (f" ({untested} settings not tested: the explanation's budget was spent)"
             if untested else "")
    if not search.culprit:
        if workarounds:
            return {**base, "kind": "workaround", "name": workarounds[0]["xla_flags"],
                    "text": f"No XLA flag explains it both ways, but "
                            f"{len(workarounds)} setting(s) under jax {new.version} bring back "
                            f"jax {old.version}'s {q.metric}: a workaround{spent}."}
        paired = any(len(t.flags) > 1 for t in search.tests)
        if untold:  # a setting that told nothing: "cannot tell", never "no"
            return {**base, "kind": "none", "name": None,
                    "text": f"Cannot tell whether an XLA flag explains it: "
                            f"{none_brought_words(len(changes), on, paired, 'brought')} jax "
                            f"{new.version}'s {q.metric} back to jax {old.version}'s, but "
                            f"{untold_words(untold)}."}
        return {**base, "kind": "none", "name": None,
                "text": (f"No XLA flag explains it: "
                         f"{none_brought_words(len(changes), on, paired)} jax "
                         f"{new.version}'s {q.metric} back to jax {old.version}'s{spent}."
                         if changes else
                         f"No XLA flag explains it: no default that can matter on {on} "
                         f"changed between jax {old.version} and {new.version}{spent}.")}
    names = " and ".join(f"`--{f.name}`" for f in search.culprit)
    back = " ".join(f"`{f.setting('new')}`" for f in search.culprit)
    forward = " ".join(f"`{f.setting('old')}`" for f in search.culprit)
    return {**base, "kind": "flag", "name": " ".join(f"--{f.name}" for f in search.culprit),
            "text": f"The change follows {names}, whose default changed "
                    f"({'; '.join(f'{f.old} → {f.new}' for f in search.culprit)}): {back} "
                    f"under jax {new.version} brings back the old "
                    f"{'behaviour' if q.noisy else q.metric}, and {forward} "
                    f"under jax {old.version} gives the new one."}


MAX_PASSES = 60  # passes turned off one at a time, at most (in the order they ran)
DISABLE = "--xla_disable_hlo_passes="


def pass_dumps(lab: Lab, release: Release, backend: str, question: Question, *,
               timeout: float, say: Say) -> list[dict]:
    """The case's module after every HLO pass that changed it under ``release`` (metadata
    left out), in the order XLA wrote them; stored once written."""
    folder = modules_folder(lab, release, backend, question, "passes", timeout=timeout, say=say)
    lowered = folder / "lowered.txt"
    found = MODULE_NAME.search(lowered.read_text(encoding="utf-8")) if lowered.exists() else None
    return read_pass_dumps(folder, found.group(1) if found else None, max_chars=None)


def difference_sentence(first: dict | None) -> str:
    """Where the per-pass dumps first differ, worded so that it never contradicts "the
    lowered modules are identical": a difference already at a pipeline's start lies in what
    that comparison leaves out."""
    if not first or first.get("status") != "differ":
        return ""
    if first.get("pass") in ("pipeline-start", None):
        return (f" Pass by pass, the two releases' HLO modules already differ as pipeline "
                f"`{first['pipeline']}` starts, before any of its passes: in what the "
                f"comparison of lowered modules leaves out (names, metadata, layouts).")
    after = {side: AFTER_PASS.search(first.get(f"{side}_file") or "") for side in ("old", "new")}
    if all(after.values()) and after["old"][1] != after["new"][1]:  # each ran its own passes
        return (f" Pass by pass, the two releases' HLO modules first differ where they run "
                f"different passes (pipeline `{first['pipeline']}`): after `{after['old'][1]}` "
                f"in jax {first['old']}, after `{after['new'][1]}` in jax {first['new']}.")
    return (f" Pass by pass, the two releases' HLO modules first differ after "
            f"`{first['pass']}` (pipeline `{first['pipeline']}`).")


# A per-pass dump's file name: "module_0001.jit_f.0054.PIPELINE.after_PASS.before_NEXT.txt"
AFTER_PASS = re.compile(r"\.after_([^.]+)\.before_")
STORED_DIFFERENCE = re.compile(r" Pass by pass, the two releases' HLO modules first differ "
                               r"after `[^`]+` \(pipeline `[^`]+`\)\.")


def explain_passes(b: MetricBisection, lab: Lab, say: Say, *,
                   deadline: Deadline | None = None,
                   progress: Callable[[dict], None] = lambda doc: None) -> dict:
    """The HLO passes that changed the case's module under the new release, each turned off
    there and measured with the case's metric and classifier; and where the two releases'
    modules first differ, pass by pass. A pass without which the case runs far slower is a
    finding of its own (``much_slower``); passes the budget left no time for are named
    (``not_tested``)."""
    req, q = b.request, b.searched
    old, new = b.pair
    classify = b.classifier()
    try:
        dumps = {r: pass_dumps(lab, r, req.backend, q, timeout=b.timeout, say=say)
                 for r in (old, new)}
    except (InstallFailed, HarnessFailed) as exc:
        return nothing(f"the per-pass dumps could not be made: {exc}")
    candidates = passes_that_changed([d["file"] for d in dumps[new]])
    tried = candidates[:MAX_PASSES]
    say(f"jax {new.version}: {len(candidates)} HLO passes changed {q.label}'s module; turning "
        f"{'each' if tried == candidates else f'the first {len(tried)}'} off")
    tests, restoring = [], []
    first = first_difference(dumps[old], dumps[new]) if dumps[old] and dumps[new] else None
    if first:
        first.update(old=str(old.version), new=str(new.version))
    for k, name in enumerate(tried, 1):
        test = behaviour_under(b, lab, classify, new, DISABLE + name, say, deadline=deadline,
                               test=f"pass {k} of {len(tried)}", beside=PASS_TESTS + k)
        if test["behaviour"] == Behaviour.MUCH_SLOWER:
            test["finding"] = "makes the case much slower: this pass matters"
        tests.append(test)
        if test["behaviour"] == Behaviour.OLD:
            restoring.append(name)
        progress({**nothing(f"The pass search is under way ({k} of {len(tried)} passes "
                            f"tried)."), "tests": list(tests), "passes_changed": candidates,
                  "first_difference": first})
    fixing: list[str] = []  # a fix: passes without which the old release is already fixed
    if b.direction == Direction.FIX and dumps[old]:
        # Ways around the old behaviour for whoever stays on the release before the fix, as
        # the deleted pipeline searched the release that grows.
        before = passes_that_changed([d["file"] for d in dumps[old]])[:MAX_PASSES]
        say(f"jax {old.version}: {len(before)} HLO passes changed {q.label}'s module; turning "
            f"each off (a fix: ways around the behaviour before it)")
        for k, name in enumerate(before, 1):
            test = behaviour_under(b, lab, classify, old, DISABLE + name, say,
                                   deadline=deadline, beside=PASS_TESTS + MAX_PASSES + k,
                                   test=f"pass {k} of {len(before)} under jax {old.version}")
            tests.append(test)
            if test["behaviour"] == Behaviour.NEW:
                fixing.append(name)
            progress({**nothing(f"The pass search is under way ({k} of {len(before)} passes "
                                f"of jax {old.version} tried)."), "tests": list(tests),
                      "passes_changed": candidates, "first_difference": first})
    parting = first if first and first.get("status") == "differ" else {}
    at_difference = ([n for _, n in parting.get("new_passes", [])] + [parting.get("pass")]
                     if restoring else
                     [n for _, n in parting.get("old_passes", [])] + [parting.get("pass")])
    found = restoring or fixing
    chosen = next((n for n in at_difference if n in found),
                  next((n for n in found if is_safe(n)), found[0] if found else None))

    def passes(behaviour: Behaviour) -> list[str]:
        return [t["xla_flags"].removeprefix(DISABLE) for t in tests if t["behaviour"] == behaviour]

    slower, changing, untested = (passes(Behaviour.MUCH_SLOWER), passes(Behaviour.THIRD),
                                  passes(Behaviour.NOT_TESTED))
    base = {"tests": tests, "passes_changed": candidates, "first_difference": first,
            # A fix's passes that bring the old behaviour back explain it; they are no way
            # around anything (the ways around it are the old release's, ``fixing``).
            "restoring": restoring,
            "workarounds": [{"release": str(r.version), "xla_flags": DISABLE + n,
                             "safe": is_safe(n), "brings": brings}
                            for r, brings, names in (
                                (new, Behaviour.OLD,
                                 [] if b.direction == Direction.FIX else restoring),
                                (old, Behaviour.NEW, fixing)) for n in names],
            "much_slower": slower, "changes_otherwise": changing, "not_tested": untested}
    where = difference_sentence(first)
    more = ""
    if slower:
        more += (" Turned off, " + ", ".join(f"`{n}`" for n in slower)
                 + f" makes the case much slower (a run past its bound of "
                   f"{tests[0]['limit']['seconds']:.0f} s): "
                 + ("this pass matters." if len(slower) == 1 else "these passes matter."))
    if changing:
        more += (" Turned off, " + ", ".join(f"`{n}`" for n in changing)
                 + f" changes the {q.metric} to a figure like neither release's.")
    if untested:
        more += (f" Not tested, the explanation's budget spent: {len(untested)} passes ("
                 + ", ".join(f"`{n}`" for n in untested[:10])
                 + (", …" if len(untested) > 10 else "") + ").")
    def shown(names: list[str]) -> str:
        return passes_said(names)

    def measured(release: Release) -> tuple[int, str]:
        """The passes measured under ``release`` (not those that crashed or failed: a skip),
        and the words for those that did."""
        at = [t for t in tests if t["release"] == str(release.version)
              and t["behaviour"] != Behaviour.NOT_TESTED]
        failed = [t["xla_flags"].split("=", 1)[1] for t in at
                  if t["behaviour"] == Behaviour.SKIP]
        return len(at) - len(failed), (
            f" ({len(failed)} more crashed or gave no figure: "
            + ", ".join(f"`{n}`" for n in failed) + ")" if failed else "")

    tried_new, failed_new = measured(new)
    said = (f"Turning off one HLO pass at a time under jax {new.version} brings back jax "
            f"{old.version}'s {q.metric} for {len(restoring)} of the {tried_new} passes "
            f"measured{failed_new}: {shown(restoring)}." if restoring else
            f"No single HLO pass, turned off under jax {new.version}, brings back jax "
            f"{old.version}'s {q.metric} ({tried_new} of the {len(candidates)} passes that "
            f"changed the module measured{failed_new}).")
    if b.direction == Direction.FIX and dumps[old]:
        tried_old, failed_old = measured(old)
        said += (f" Before the fix, turning off one at a time under jax {old.version} gives "
                 f"jax {new.version}'s {q.metric} for {len(fixing)} of the {tried_old} passes "
                 f"measured{failed_old}: {shown(fixing)}." if fixing else
                 f" Before the fix, no single HLO pass turned off under jax {old.version} gives "
                 f"jax {new.version}'s {q.metric} ({tried_old} measured{failed_old}).")
    return {**base, "kind": "none" if chosen is None else "pass", "name": chosen,
            "text": f"{said}{where}{more}"}


def explain_release(lab: Lab, release: Release, backend: str, question: Question, say: Say,
                    *, threshold: float | None = None, timeout: float = 1800.0,
                    runs: int | None = None, max_runs: int | None = None) -> dict:
    """``--explain RELEASE``: one release, no pair to compare with. Each HLO pass that changed
    the case's module is turned off in turn and the metric measured again against the release
    with every pass, as a bisection tells its ends apart (a noisy metric: the paired test on
    interleaved runs, whose undecided answer is "cannot tell"). A pass without which the
    figure differs is named, the largest change first; one without which it is better (lower,
    or a shape no longer growing) is a way around it (``workarounds``)."""
    reduce, batch = reduce_for(question), batch_size(question, runs)
    pairs = max_runs or MAX_RUNS_NOISY

    def run(asked: Question, number: int):
        return lab.run(release, backend, asked, number, timeout=timeout)

    base_runs = [run(question, k) for k in range(1, batch + 1)]
    base = values_of(base_runs, reduce)
    doc = {"release": str(release.version), "metric": question.metric, "case": question.label,
           "baseline": middle(base), "passes_changed": [], "tests": [], "culprit": None,
           "workarounds": [],
           # a shape's figures at each value with every pass (as each test's "series")
           "baseline_series": next((sized["figures"] for r in base_runs
                                    if (sized := series_of(r))), None) if question.over
           else None}

    def named_none(text: str) -> dict:
        doc["culprit"] = {"kind": "none", "name": None, "text": text}
        return doc

    if not base:
        return named_none(f"{question.metric} of {question.label} could not be measured "
                          f"under jax {release.version}")
    dumps = pass_dumps(lab, release, backend, question, timeout=timeout, say=say)
    candidates = passes_that_changed([d["file"] for d in dumps])
    doc["passes_changed"] = candidates
    say(f"jax {release.version}: {len(candidates)} HLO passes changed {question.label}'s "
        f"module; turning each off")
    effects = []
    for j, name in enumerate(candidates[:MAX_PASSES]):
        flag = DISABLE + name
        without = replace(question, xla_flags=join_flags(question.xla_flags, flag))
        # A noisy metric's release with every pass is run again beside each test (its own
        # run numbers, stored): a pair is two runs made one after the other.
        first = batch + j * pairs if question.noisy else 0
        c = compare_settings(lambda k, first=first: run(question, first + k),
                             lambda k, without=without: run(without, k), question, threshold,
                             batch=batch, max_runs=pairs, reduce=reduce)
        test = {"xla_flags": flag, "figure": middle(c.b), "verdict": c.verdict,
                "changes": c.verdict == Verdict.CHANGED,
                "direction": c.ends.direction if c.verdict == Verdict.CHANGED else None,
                "ratio": c.ends.ratio if c.ends else None, "runs": c.runs,
                "reason": ((c.ends.reason if c.ends else None)
                           or no_figure_reason(c.b_runs)),
                "safe": is_safe(name),
                # a shape's figures at each value without the pass (the word alone hides them)
                "series": next((sized["figures"] for r in c.b_runs
                                if (sized := series_of(r))), None) if question.over else None}
        doc["tests"].append(test)
        if test["changes"]:
            effects.append((name, test))
            if better_without(base, test):
                doc["workarounds"].append({"release": str(release.version), "xla_flags": flag,
                                           "figure": test["figure"], "safe": test["safe"]})
    untold = [t["xla_flags"].removeprefix(DISABLE) for t in doc["tests"]
              if t["verdict"] == Verdict.CANNOT_TELL]
    cannot = (f"; cannot tell for {len(untold)} (the paired test undecided within "
              f"{pairs} pairs of runs: " + ", ".join(f"`{n}`" for n in untold) + ")"
              if untold else "")
    if not effects:
        return named_none(f"No single HLO pass, turned off under jax {release.version}, "
                          f"changes {question.metric} of {question.label} ({len(candidates)} "
                          f"passes changed its module{cannot})")
    effects.sort(key=lambda e: -abs(math.log(e[1]["ratio"])) if e[1]["ratio"] else 0)

    def effect(t: dict) -> str:
        if isinstance(t["figure"], (list, tuple)):  # a shape: its word without the pass
            return f"{t['figure'][0]} without it"
        return ({Direction.FIX: "lower", Direction.REGRESSION: "higher"}.get(t["direction"],
                                                                            "different")
                + (f", {t['ratio']:.2f}×" if t["ratio"] else ""))

    shown = "; ".join(
        f"`{name}` ({effect(t)}"
        + ("" if t["safe"] else ", diagnostic only: correctness depends on it") + ")"
        for name, t in effects)
    base_word = (baseline_shape_words(base[0][0]) if isinstance(base[0], (list, tuple))
                 else "without it, the figure is")
    doc["culprit"] = {"kind": "pass", "name": effects[0][0],
                      "text": f"Turning off one HLO pass at a time under jax "
                              f"{release.version}, {len(effects)} of the "
                              f"{counted_passes(doc['tests'], question.label)} "
                              f"{question.metric} "
                              f"({base_word}): {shown}{cannot}"}
    return doc


def counted_passes(tests: list[dict], label: str) -> str:
    """"the 11 passes that changed scan_growth's module", or where some gave no figure
    without them, "the 17 passes measured (of 21 that changed …; 4 gave no figure …)"."""
    none = sum(t["verdict"] == Verdict.NO_FIGURE for t in tests)
    if not none:
        return f"{len(tests)} passes that changed {label}'s module change its"
    return (f"{len(tests) - none} passes measured (of the {len(tests)} that changed {label}'s "
            f"module, {none} gave no figure without them) change its")


def baseline_shape_words(word: str) -> str:
    """The baseline's shape over the sizes, every pass left on ("grows" → "with every pass
    left on, it grows"): what each pass turned off below is measured against."""
    return f"with every pass left on, it {'is constant' if word == 'constant' else word}"


def passes_said(names: list[str]) -> str:
    """Every pass named, as one list ("`a`, `b` and `c`"), then those only a diagnostic
    (correctness depends on them) said after it, so that no note breaks the list."""
    quoted = [f"`{n}`" for n in names]
    listed = (", ".join(quoted[:-1]) + " and " + quoted[-1] if len(quoted) > 1
              else "".join(quoted))
    unsafe = [f"`{n}`" for n in names if not is_safe(n)]
    if not unsafe:
        return listed
    return (listed + " (" + (" and ".join(unsafe) if len(unsafe) < 3 else ", ".join(unsafe))
            + f": diagnostic only, correctness depends on {'it' if len(unsafe) == 1 else 'them'})")


def better_without(base: tuple, test: dict) -> bool:
    """A pass turned off gives a better figure: lower, or a shape that no longer grows."""
    if isinstance(base[0], (list, tuple)):
        return test["figure"][0] == "constant" and base[0][0] != "constant"
    return test["direction"] == Direction.FIX
