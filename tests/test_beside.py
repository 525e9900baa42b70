"""The steps after the answer run beside each other (jaxbisect/stages/beside.py): each after
the steps it needs, at most ``jobs`` processes at once, the waiting ones by priority; a failure
stops the rest and is raised; one job runs them one after the other in the caller's thread."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from in_flight import InFlight

from jaxbisect.errors import UserError
from jaxbisect.lab.store import Key, Store
from jaxbisect.stages.beside import Slots, SlottedStore, Step, Timings, run_stages


def steps_logging(log: list, spec: dict[str, tuple], slots: Slots | None = None) -> list[Step]:
    """A step a name: (after, seconds it holds a slot); each logs its start and end."""
    def run(name: str, seconds: float):
        def go(state) -> None:
            log.append(("start", name))
            if slots is not None:
                with slots.slot():
                    time.sleep(seconds)
            else:
                time.sleep(seconds)
            log.append(("end", name))
        return go

    return [Step(name, lambda s: True, run(name, seconds), after)
            for name, (after, seconds) in spec.items()]


def test_a_step_begins_only_after_the_steps_it_needs_wherever_they_are_listed():
    log: list = []
    spec = {"late": (("early",), 0.0), "early": ((), 0.05), "free": ((), 0.0)}
    run_stages(steps_logging(log, spec), None, jobs=2, timings=Timings())
    assert log.index(("start", "late")) > log.index(("end", "early"))
    assert {name for _, name in log} == set(spec)


def test_steps_beside_each_other_run_at_once_and_one_job_runs_them_in_order():
    met = threading.Barrier(2, timeout=5)
    threads: list[str] = []

    def meeting(state) -> None:
        threads.append(threading.current_thread().name)
        met.wait()  # passes only if the other step runs at the same time

    both = [Step(name, lambda s: True, meeting, ()) for name in ("a", "b")]
    timings = Timings()
    run_stages(both, None, jobs=2, timings=timings)
    assert set(timings.steps) == {"a", "b"}

    order: list[str] = []
    serial = [Step(name, lambda s: True, lambda s, n=name: order.append(n), ())
              for name in ("x", "y", "z")]
    run_stages(serial, None, jobs=1, timings=Timings())
    assert order == ["x", "y", "z"]


def test_a_serial_step_runs_after_every_step_before_it_and_an_unasked_one_not_at_all():
    log: list = []
    spec = {"beside": ((), 0.05)}
    stages = [*steps_logging(log, spec),
              Step("search", lambda s: True, lambda s: log.append(("start", "search")), None),
              Step("never", lambda s: False, lambda s: log.append(("start", "never")), ())]
    timings = Timings()
    run_stages(stages, None, jobs=3, timings=timings)
    assert log == [("start", "beside"), ("end", "beside"), ("start", "search")]
    assert "never" not in timings.steps
    doc = timings.as_json()
    assert set(doc["steps"]) == {"beside", "search"}
    assert doc["steps"]["search"]["began"] >= doc["steps"]["beside"]["began"]


def test_a_failure_stops_the_steps_after_it_and_is_raised_once_the_others_stopped():
    ran: list[str] = []

    def refuse(state) -> None:
        raise UserError("--hlo-releases: 9.9.9 is not a release of the range")

    stages = [Step("refused", lambda s: True, refuse, ()),
              Step("after it", lambda s: True, lambda s: ran.append("after it"), ("refused",)),
              Step("beside", lambda s: True, lambda s: (time.sleep(0.05), ran.append("beside")),
                   ())]
    with pytest.raises(UserError, match="9.9.9"):
        run_stages(stages, None, jobs=2, timings=Timings())
    assert "after it" not in ran


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.lists(st.integers(0, 5), min_size=1, max_size=8))
def test_never_more_processes_than_slots(size, priorities):
    slots, held = Slots(size), InFlight()

    def one(priority: int) -> None:
        with slots.slot(priority), held:
            time.sleep(0.002)

    threads = [threading.Thread(target=one, args=(p,)) for p in priorities]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert held.most <= size and held.now == 0


def test_waiting_processes_go_by_their_steps_priority():
    slots, order = Slots(1), []
    release = threading.Event()

    def blocker() -> None:
        with slots.slot(0):
            release.wait(5)

    def waiter(priority: int) -> None:
        with slots.slot(priority):
            order.append(priority)

    first = threading.Thread(target=blocker)
    first.start()
    time.sleep(0.05)
    waiters = [threading.Thread(target=waiter, args=(p,)) for p in (5, 1, 3)]
    for t in waiters:
        t.start()
        time.sleep(0.02)  # all three queued behind the blocker, 5 first
    release.set()
    for t in (first, *waiters):
        t.join(5)
    assert order == [1, 3, 5]


def test_a_slot_stays_free_for_a_step_under_way_between_its_processes():
    """Step 0 is under way but has not asked yet: a later step's process does not take the
    last slot from it."""
    slots = Slots(1)
    slots.began(0)
    got = threading.Event()

    def later() -> None:
        with slots.slot(5):
            got.set()

    thread = threading.Thread(target=later)
    thread.start()
    assert not got.wait(0.1)
    slots.ended(0)
    assert got.wait(5)
    thread.join(5)


def test_a_result_asked_for_by_two_steps_at_once_is_made_once(tmp_path):
    slots, made = Slots(2), []
    store = Store(tmp_path / "store")
    key = Key("0.5.0", "cpu", "dumps", {"case": "x"})
    gate = threading.Barrier(2, timeout=5)

    def make() -> dict:
        made.append(1)
        time.sleep(0.05)
        return {"status": "ok"}

    def ask(priority: int, got: list) -> None:
        gate.wait()
        got.append(SlottedStore(store, slots, priority).get_or_run(key, make))

    got: list = []
    threads = [threading.Thread(target=ask, args=(p, got)) for p in (0, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert made == [1] and got == [{"status": "ok"}] * 2


def test_the_steps_lab_takes_slots_only_where_more_than_one_job_runs(tmp_path):
    from jaxbisect.pipeline import Bisecting

    lab = SimpleNamespace(store=Store(tmp_path / "store"))
    two = Bisecting(SimpleNamespace(), print, None, None, None, lab, [], jobs=2)
    assert two.slots is not None and two.slots.size == 2
    assert two.evidence_lab.slots is two.slots
    assert isinstance(two.evidence_lab.store, SlottedStore)
    one = Bisecting(SimpleNamespace(), print, None, None, None, lab, [], jobs=1)
    assert one.slots is None and one.evidence_lab is lab
