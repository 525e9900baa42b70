"""--jobs for a metric bisection: a round's releases probed at once, through injected runs
(real threads, a run that waits so that runs in flight overlap): the same pair as one at a
time, the overlap recorded, every run of a release numbered once. The installs ahead of the
next round and their warm-up imports, with a stand-in python."""

from __future__ import annotations

import os
import random
import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.search.classify import deterministic
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Run
from jaxbisect.stages.releases import InstallsAhead


class Lab:
    """Runs of a history ("old"/"new" per release), each lasting a moment; counts how many
    are in flight at once and which run numbers each release was asked for."""

    def __init__(self, history: list[str], *, noisy: bool, seed: int = 0, wait: float = 0):
        self.history, self.noisy, self.seed, self.wait = history, noisy, seed, wait
        self.lock = threading.Condition()
        self.active = self.most = 0
        self.asked: list[tuple[int, int]] = []

    def __call__(self, i: int, number: int) -> Run:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
            self.asked.append((i, number))
            self.lock.notify_all()
            if self.wait and 0 < i < len(self.history) - 1:  # a moment for a peer to start
                self.lock.wait_for(lambda: self.active >= 2, timeout=self.wait)
        time.sleep(0.001)
        with self.lock:
            self.active -= 1
        base = 10.0 if self.history[i] == "old" else 30.0
        if self.noisy:  # the same figure whenever run k of release i is asked (the store)
            base *= 1 + random.Random(f"{self.seed}-{i}-{number}").uniform(-0.05, 0.05)
        return Run(release=str(i), number=number, status="ok", samples=(base,))


@st.composite
def histories(draw):
    n = draw(st.integers(6, 14))
    change = draw(st.integers(1, n - 1))
    return ["old" if i < change else "new" for i in range(n)], draw(st.integers(0, 99))


@settings(max_examples=25, deadline=None)
@given(histories(), st.sampled_from([2, 3]))
def test_jobs_find_the_same_pair_with_probes_in_flight_at_once(drawn, jobs):
    history, seed = drawn
    change = history.index("new")
    for noisy in (False, True):
        one = Lab(history, noisy=noisy, seed=seed)
        many = Lab(history, noisy=noisy, seed=seed, wait=0.05)
        kind = dict(noisy_metric=noisy) if noisy else dict(noisy_metric=False,
                                                           make_classifier=deterministic)
        make = kind.pop("make_classifier", None)
        alone = search_metric(len(history), one, make, **kind)
        at_once = search_metric(len(history), many, make, **kind, jobs=jobs)
        for s in (alone, at_once):
            assert s.status == "found"
            assert (s.result.last_old, s.result.first_new) == (change - 1, change)
        # Every run of a release asked once, numbered 1, 2, … with no gap or repeat.
        for i in set(i for i, _ in many.asked):
            numbers = sorted(k for j, k in many.asked if j == i)
            assert numbers == list(range(1, len(numbers) + 1))
        middle_rounds = [r for r in at_once.result.rounds if not set(r) <= {0, len(history) - 1}]
        assert any(len(r) > 1 for r in middle_rounds)   # n >= 6: the window split in jobs+1
        assert many.most >= 2                  # probes of one round were in flight at once
        assert one.most == 1
        # The search says which probes overlapped in time: only releases of one round.
        assert set(at_once.spans) == set(at_once.placed) and alone.overlapped() == []
        rounds = [set(r) for r in at_once.result.rounds]
        assert at_once.overlapped() and all(any({i, j} <= r for r in rounds)
                                            for i, j in at_once.overlapped())


@settings(max_examples=100, deadline=None)
@given(histories(), st.sampled_from([1, 2, 3]), st.integers(2, 5))
def test_every_probe_was_installed_ahead_and_nothing_cheap(drawn, jobs, every):
    """The environments the next round could need are handed to ``ahead`` while a round
    runs (search.prefetch_order): every release the search probes between the ends was named
    before its probe, unless cheap already; a cheap one is never named."""
    history, _ = drawn
    lab = Lab(history, noisy=False)
    named: list[set[int]] = []
    probed_before: list[int] = []
    certain: set[int] = set()

    def ahead(indices: list[int], sure: tuple[int, ...]) -> None:
        named.append(set(indices))
        probed_before.append(len(lab.asked))
        certain.update(sure)

    def cheap(i: int) -> bool:
        return i % every == 0

    s = search_metric(len(history), lab, lambda o, n: deterministic(o, n), noisy_metric=False,
                      jobs=jobs, ahead=ahead, cheap=cheap)
    assert s.status == "found" and s.result.first_new == history.index("new")
    order = [i for i, _ in lab.asked]
    for i in set(order) - {0, len(history) - 1}:
        first = order.index(i)
        if not cheap(i):
            assert any(i in names and before <= first
                       for names, before in zip(named, probed_before)), (i, named)
    assert not any(cheap(i) for names in named for i in names)
    # a release named certain to be in the pair is in the pair found
    assert certain <= {s.result.last_old, s.result.first_new}


def _sleeper(tmp_path):
    """A stand-in for an environment's python whose import takes 60 s; it writes its pid."""
    pid_file = tmp_path / "pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    python.chmod(0o755)
    return python, pid_file


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _started(pid_file) -> int:
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the warm-up never started")


@pytest.mark.parametrize("how", ["the search is over", "no longer ahead"])
def test_a_warm_up_is_never_waited_for(tmp_path, how):
    """A warm-up import after an install ahead is a head start only: the search ending, or
    moving past its release, stops it rather than waiting its 60 s out."""
    python, pid_file = _sleeper(tmp_path)
    fresh = SimpleNamespace(reused=False, python=python)
    with InstallsAhead(lambda i: fresh, 1) as ahead:
        ahead([3])
        pid = _started(pid_file)
        assert _alive(pid)
        if how == "no longer ahead":
            ahead([5, 6])
            assert not _alive(pid)
    assert not _alive(pid)


def test_no_warm_up_for_a_reused_environment_or_a_release_no_longer_ahead(tmp_path):
    """An environment that was there already needs no warm-up; nor does a release whose
    probe began before its install ahead finished (the probe writes the bytecode itself)."""
    python, pid_file = _sleeper(tmp_path)
    with InstallsAhead(lambda i: SimpleNamespace(reused=True, python=python), 1) as ahead:
        ahead([3])
    assert not pid_file.exists()
    with InstallsAhead(lambda i: None, 1) as ahead:
        ahead([5, 6])  # the round that probes 3 began
        ahead.warm(3, python)
        time.sleep(0.3)
    assert not pid_file.exists()


def test_the_answers_runs_begin_once_each_and_outlive_the_search():
    """A candidate certain to be in the pair has the answer's runs begun beside the round, once
    however often the rounds name it, and the search's end does not wait for them (the steps
    after it find them made)."""
    begun: list[int] = []
    release = threading.Event()

    def for_the_answer(i: int) -> None:
        begun.append(i)
        release.wait(5)

    started = time.monotonic()
    with InstallsAhead(lambda i: None, 1, for_the_answer) as ahead:
        ahead([], (7,))
        ahead([], (7,))
        ahead([4], ())
    assert time.monotonic() - started < 2  # not waited for
    release.set()
    ahead.answers.shutdown(wait=True)
    assert begun == [7]


def test_a_failed_search_begins_no_more_of_the_answers_runs():
    """Ctrl-C or a refusal in the search: the answer's runs not yet begun never start."""
    begun: list[int] = []
    gate = threading.Event()

    def for_the_answer(i: int) -> None:
        begun.append(i)
        gate.wait(5)

    with pytest.raises(KeyboardInterrupt), \
            InstallsAhead(lambda i: None, 1, for_the_answer) as ahead:
        ahead([], (3,))
        ahead([], (5,))  # queued behind 3
        for _ in range(500):
            if begun:
                break
            time.sleep(0.01)
        raise KeyboardInterrupt
    gate.set()
    ahead.answers.shutdown(wait=True)
    assert begun == [3]
    with InstallsAhead(lambda i: None, 1, for_the_answer) as ahead:
        pass
    ahead([], (9,))  # after the search: nothing begins
    ahead.answers.shutdown(wait=True)
    assert 9 not in begun
