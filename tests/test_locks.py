"""The environment lock (jaxbisect/lab/locks.py): mkdir-based, across processes and hosts."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

from jaxbisect.lab.locks import HOLDER, held, is_stale


def _hold_and_count(lock: str, log: str, n: int) -> None:
    for _ in range(n):
        with held(Path(lock), poll=0.01):
            with open(log, "a") as f:
                f.write(f"in {os.getpid()}\n")
            time.sleep(0.005)
            with open(log, "a") as f:
                f.write(f"out {os.getpid()}\n")


def test_processes_never_hold_it_at_once(tmp_path):
    lock, log = tmp_path / "env.lock-dir", tmp_path / "log"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_hold_and_count, args=(str(lock), str(log), 10))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 2 * 10 * 2
    for enter, leave in zip(lines[::2], lines[1::2]):  # strictly in, out, in, out …
        assert enter.startswith("in ") and leave == "out " + enter[3:]
    assert not lock.exists()


def _write_holder(lock: Path, host: str, pid: int, mtime: float) -> None:
    lock.mkdir()
    (lock / HOLDER).write_text(json.dumps({"host": host, "pid": pid}))
    os.utime(lock / HOLDER, (mtime, mtime))
    os.utime(lock, (mtime, mtime))


def test_a_dead_holder_on_this_host_is_stale_a_live_one_is_not(tmp_path):
    now = time.time()
    lock = tmp_path / "a"
    _write_holder(lock, "node1", 42, now)
    assert is_stale(lock, host="node1", now=now, alive=lambda pid: False)
    assert not is_stale(lock, host="node1", now=now, alive=lambda pid: True)


def test_another_hosts_holder_is_stale_only_without_heartbeat(tmp_path):
    now = time.time()
    lock = tmp_path / "a"
    _write_holder(lock, "node2", 42, now - 60)
    # Its pid means nothing here: only the heartbeat's age counts.
    assert not is_stale(lock, host="node1", now=now, alive=lambda pid: False, stale=120)
    assert is_stale(lock, host="node1", now=now + 100, alive=lambda pid: True, stale=120)


def test_a_stale_lock_is_broken_and_taken(tmp_path):
    lock = tmp_path / "env.lock-dir"
    _write_holder(lock, "gone-node", 1, time.time() - 3600)  # a killed job's lock
    waited = []
    with held(lock, on_wait=waited.append, poll=0.01):
        assert json.loads((lock / HOLDER).read_text())["pid"] == os.getpid()
    assert waited == [] and not lock.exists()
    assert list(tmp_path.iterdir()) == []  # the broken one is removed, not left aside


def test_a_live_holder_is_waited_for(tmp_path):
    lock = tmp_path / "env.lock-dir"
    _write_holder(lock, "other-node", 1, time.time())
    waited = []
    started = time.monotonic()
    with held(lock, on_wait=waited.append, poll=0.05, stale=1.0):
        pass  # taken only once its heartbeat is a second old
    assert waited and waited[0]["host"] == "other-node"
    assert time.monotonic() - started >= 0.5


def test_a_wait_on_this_runs_own_worker_names_it_never_another_run(tmp_path):
    # The install-ahead pool's thread holds the lock; the search's thread waits for it: the
    # holder is this process, named by its part, not "another run (host, pid N)".
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from jaxbisect.lab.locks import holder_words, is_ours

    lock, taken, release = tmp_path / "env.lock-dir", threading.Event(), threading.Event()

    def hold() -> None:
        with held(lock):
            taken.set()
            release.wait(10)

    with ThreadPoolExecutor(1, thread_name_prefix="install") as pool:
        holding = pool.submit(hold)
        assert taken.wait(10)
        waited = []
        threading.Timer(0.3, release.set).start()
        with held(lock, on_wait=waited.append, poll=0.01):
            pass
        holding.result()
    assert len(waited) == 1 and is_ours(waited[0])
    assert holder_words(waited[0]) == "this run's install ahead"
    other = {"host": "node9", "pid": 4242, "thread_name": "install_0"}
    assert not is_ours(other) and holder_words(other) == "another run (node9, pid 4242)"
    assert holder_words({"host": waited[0]["host"], "pid": os.getpid() + 1}).startswith(
        "another run")


def test_a_short_wait_is_not_said(tmp_path):
    lock = tmp_path / "env.lock-dir"
    _write_holder(lock, "other-node", 1, time.time())
    waited = []
    with held(lock, on_wait=waited.append, poll=0.02, stale=0.3, patience=5.0):
        pass  # broken as stale after 0.3 s, before the patience runs out
    assert waited == []
