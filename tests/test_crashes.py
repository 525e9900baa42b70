"""Crashes as behaviours: how a finished process's crash is named, its rate as the error
metric's figure, and the search over releases some of which crash (injected runs)."""

from __future__ import annotations

import signal

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.search.classify import Label, matching
from jaxbisect.search.crashes import CRASH_RUNS, crash_of, fatal_line, mask, rate_of, signal_of
from jaxbisect.search.metric_search import crash_rated, crashes_of, search_metric
from jaxbisect.search.question import Run

ABORT = ("2026-11-30 13:35:40.341465: F external/xla/xla/service/cpu/cpu_compiler.cc:1021] "
         "Check failed: buffer != nullptr at 0x7f3a2c001a40 (pid 61724)")
TERMINATE = ("terminate called after throwing an instance of 'std::runtime_error'\n"
             "  what():  Invalid argument: buffer 0x55d0c3e1f000 is too small\n")


def test_signals_from_subprocess_and_from_a_shell():
    assert signal_of(-signal.SIGSEGV) == signal.SIGSEGV
    assert signal_of(128 + signal.SIGSEGV, shell=True) == signal.SIGSEGV
    assert signal_of(128 + signal.SIGSEGV) is None          # a process's own exit status
    assert signal_of(-signal.SIGINT) is None                 # an interruption, not a crash
    assert signal_of(-signal.SIGTERM) is None
    assert signal_of(1, shell=True) is None and signal_of(0) is None


def test_a_crash_is_named_with_its_fatal_line_masked():
    assert crash_of(-signal.SIGSEGV, "some output\n") == "crashed: SIGSEGV"
    assert crash_of(-signal.SIGABRT, ABORT) == (
        "crashed: SIGABRT: Check failed: buffer != nullptr at 0x… (pid N)")
    assert crash_of(-signal.SIGABRT, TERMINATE) == (
        "crashed: SIGABRT: what():  Invalid argument: buffer 0x… is too small")
    assert crash_of(-signal.SIGKILL, "") == "crashed: SIGKILL (out of memory?)"
    assert crash_of(-signal.SIGBUS, "Fatal Python error: Bus error\n") == (
        "crashed: SIGBUS: Fatal Python error: Bus error")
    # An uncaught C++ error that exited instead of aborting is a crash too ...
    assert crash_of(1, "terminate called without an active exception\n") == (
        "crashed: terminate called without an active exception")
    # ... a Python exception is not (the error metric's own line names it).
    assert crash_of(1, "Traceback …\nValueError: boom\n") is None
    assert crash_of(0, ABORT) is None and crash_of(-signal.SIGINT, ABORT) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**48), st.integers(100, 10**7))
def test_masking_makes_two_runs_of_one_crash_equal(address, pid):
    line = f"F1130 13:35:40.341465 {pid} cpu_compiler.cc:1021] Check failed at {address:#x}"
    assert fatal_line(line) == "Check failed at 0x…"
    once, again = (crash_of(-signal.SIGABRT, f"F1130 13:35:40.341465 {p} x.cc:1] at {a:#x}")
                   for p, a in ((pid, address), (pid + 1, address + 4096)))
    assert once == again == "crashed: SIGABRT: at 0x…"
    assert mask(f"pid {pid}") == "pid N"


def test_the_rate_is_the_figure():
    crash = "crashed: SIGSEGV"
    assert rate_of(["no error"] * 3) is None
    every = rate_of([crash] * 3)
    assert every.figure([]) == crash and every.as_json()["rate"] == 1.0
    some = rate_of([crash, "no error", crash])
    assert (some.crashed, some.runs) == (2, 3)
    assert some.figure(["no error"]) == "crashed: SIGSEGV in 2 of 3 runs (otherwise: no error)"


def crash_history(history: list[str], calls: list) -> callable:
    """Error-metric runs: 'ok' gives no error, 'crash' a SIGSEGV every run, 'flaky' one on
    odd run numbers."""
    def run_at(i: int, number: int) -> Run:
        calls.append((i, number))
        truth = history[i]
        crashed = truth == "crash" or (truth == "flaky" and number % 2 == 1)
        figure = "crashed: SIGSEGV" if crashed else "no error"
        return Run(release=str(i), number=number, status="ok", samples=(figure,),
                   crash=figure if crashed else None)
    return run_at


def error_classifier(old, new):
    return matching(list(old), list(new), lambda a, b: a == b)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1))))
def test_a_crash_that_came_with_a_release_is_found(n_change):
    n, change = n_change
    history = ["ok" if i < change else "crash" for i in range(n)]
    calls: list = []
    s = search_metric(n, crash_rated(crash_history(history, calls), n), error_classifier,
                      noisy_metric=False)
    assert s.status == "found"
    assert (s.result.last_old, s.result.first_new) == (change - 1, change)
    assert s.placed[change].values == ("crashed: SIGSEGV",)
    # Every release measured after a crash was seen: CRASH_RUNS runs, each a stored number.
    for i in s.placed:
        numbers = sorted(number for j, number in calls if j == i)
        assert numbers == list(range(1, CRASH_RUNS + 1))
    assert crashes_of(s.placed[n - 1]) == {"crash": "crashed: SIGSEGV", "crashed": 3,
                                           "runs": 3, "rate": 1.0}


def test_a_flaky_crash_is_its_rate_and_neither_end():
    """Old: no error; new: a crash every run; in the middle a release that crashes in 2 of 3
    runs: a third behaviour, named with its rate, never filed under either end."""
    history = ["ok", "ok", "flaky", "crash", "crash"]
    s = search_metric(5, crash_rated(crash_history(history, []), 5), error_classifier,
                      noisy_metric=False)
    flaky = s.placed[2]
    assert flaky.values == ("crashed: SIGSEGV in 2 of 3 runs (otherwise: no error)",)
    assert flaky.placement.label is Label.SKIP and flaky.placement.third
    assert crashes_of(flaky)["rate"] == round(2 / 3, 3)
    assert s.status == "found" and s.result.last_old == 1 and s.result.first_new == 3


def test_a_flaky_crash_at_an_end_is_seen_although_its_first_run_measured():
    """The ends are always measured CRASH_RUNS times under the error metric: a crash in 1 of
    3 runs (the first run fine) still tells the ends apart."""
    def run_at(i: int, number: int) -> Run:
        crashed = i == 1 and number == 2
        figure = "crashed: SIGSEGV" if crashed else "no error"
        return Run(release=str(i), number=number, status="ok", samples=(figure,),
                   crash=figure if crashed else None)

    s = search_metric(2, crash_rated(run_at, 2), error_classifier, noisy_metric=False)
    assert s.status == "found"
    assert s.placed[1].values == ("crashed: SIGSEGV in 1 of 3 runs (otherwise: no error)",)


def test_under_another_metric_a_crashing_end_is_named_and_the_other_end_measured():
    def run_at(i: int, number: int) -> Run:
        if i == 1:
            return Run(release="1", number=number, status="crashed", error="crashed: SIGSEGV",
                       crash="crashed: SIGSEGV")
        return Run(release="0", number=number, status="ok", samples=(0.01,))

    from jaxbisect.search.classify import noisy

    s = search_metric(2, run_at, noisy, noisy_metric=True)
    assert s.status == "unmeasurable" and "crashed: SIGSEGV" in s.reason
    runs = len(s.placed[1].runs)          # the pairs before the first look
    assert runs >= 2
    assert s.placed[0].values == (0.01,) * runs and s.placed[0].failure is None  # measured
    assert s.placed[1].placement is None and not s.placed[1].values
    assert crashes_of(s.placed[1]) == {"crash": "crashed: SIGSEGV", "crashed": runs,
                                       "runs": runs, "rate": 1.0}


def test_a_failed_check_keeps_its_operands():
    line = "F0101 00:00:00.000000 4242 shape_util.cc:9] Check failed: 256 == 512 (thread 77)"
    assert crash_of(-signal.SIGABRT, line) == (
        "crashed: SIGABRT: Check failed: 256 == 512 (thread N)")
