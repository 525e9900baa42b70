"""A lock that holds across the nodes of a cluster: the shared cache may be on NFS, where
``flock`` is not to be trusted (older clients lock only locally; some servers not at all).

The lock is a folder made with ``mkdir`` (atomic on NFS as everywhere), holding
``holder.json``: the holder's host and pid. The holder touches it every ``BEAT`` seconds. A
lock is stale, and broken, when its holder is gone: on this host, its pid no longer runs; on
any host, it has not been touched for ``STALE`` seconds (a node that died, a killed job).
Breaking renames the folder away first, so that of two waiters only one breaks it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

BEAT = 15.0
STALE = 120.0
HOLDER = "holder.json"
# The parts of one run, by the name of the thread they run on (their pools are named so): a
# lock held by this process is waited on by another part of the same run, never "another run".
PARTS = (("install", "install ahead"), ("probe", "probe"), ("end", "run of an end"),
         ("beside", "run beside the search"), ("release", "release's runs"),
         ("MainThread", "search"))


class KeyedLocks:
    """One lock a key, in this process: what two threads make under the same key is made once
    (the second finds it made)."""

    def __init__(self):
        self._locks: dict = {}
        self._lock = threading.Lock()

    def __call__(self, key) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def holder(lock: Path) -> dict | None:
    """Who holds ``lock`` ({host, pid, since}), or None where nobody does (or it is being
    written this instant)."""
    try:
        return json.loads((lock / HOLDER).read_text())
    except (OSError, ValueError):
        return None


def is_stale(lock: Path, *, host: str | None = None, now: float | None = None,
             alive: Callable[[int], bool] = _alive, stale: float = STALE) -> bool:
    """The lock's holder is gone: a dead pid on this host, or no heartbeat for ``stale`` s."""
    host = host or socket.gethostname()
    now = time.time() if now is None else now
    try:
        beat = lock.stat().st_mtime
    except OSError:
        return False  # gone meanwhile
    with contextlib.suppress(OSError):  # made, the holder file not written yet
        beat = max((lock / HOLDER).stat().st_mtime, beat)
    who = holder(lock)
    if who and who.get("host") == host and not alive(int(who.get("pid", 0))):
        return True
    return now - beat > stale


def part_of_run(thread_name: str | None = None) -> str:
    """The part of this run that a thread is, in words ("install ahead", "probe")."""
    name = thread_name or threading.current_thread().name
    return next((words for prefix, words in PARTS if name.startswith(prefix)), f"thread {name}")


def is_ours(who: dict | None, *, host: str | None = None, pid: int | None = None) -> bool:
    """``who`` (a lock's holder) is this process: another part of the same run."""
    return bool(who) and who.get("host") == (host or socket.gethostname()) \
        and int(who.get("pid", 0)) == (os.getpid() if pid is None else pid)


def holder_words(who: dict | None) -> str:
    """Who holds a lock, as a message names it: this run's part, or another run (host, pid)."""
    if is_ours(who):
        return f"this run's {part_of_run(who.get('thread_name') or '?')}"
    if who:
        return f"another run ({who['host']}, pid {who['pid']})"
    return "another run"


@contextmanager
def held(lock: Path, *, on_wait: Callable[[dict | None], None] = lambda who: None,
         poll: float = 0.5, beat: float = BEAT, stale: float = STALE,
         patience: float = 0.0) -> Iterator[None]:
    """Hold ``lock`` (a folder path) for the ``with`` block; threads of one process exclude
    each other too. ``on_wait``: called once, with the holder, when another holds it and it
    has been waited for ``patience`` seconds."""
    me = {"host": socket.gethostname(), "pid": os.getpid(),
          "thread": threading.get_ident(), "thread_name": threading.current_thread().name,
          "since": time.time()}
    waited, began = False, time.monotonic()
    while True:
        with contextlib.suppress(FileExistsError):
            lock.mkdir()
            break
        if is_stale(lock, stale=stale):
            away = lock.with_name(f"{lock.name}.stale-{uuid.uuid4().hex[:8]}")
            with contextlib.suppress(OSError):  # another waiter broke it first
                os.rename(lock, away)
                shutil.rmtree(away, ignore_errors=True)
            continue
        if not waited and time.monotonic() - began >= patience:
            on_wait(holder(lock))
            waited = True
        time.sleep(poll)
    tmp = lock / f"{HOLDER}.{uuid.uuid4().hex[:8]}"
    tmp.write_text(json.dumps(me))
    os.replace(tmp, lock / HOLDER)
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(beat):
            try:
                os.utime(lock / HOLDER)
            except OSError:
                return

    beating = threading.Thread(target=heartbeat, daemon=True, name="lock-heartbeat")
    beating.start()
    try:
        yield
    finally:
        done.set()
        beating.join()
        shutil.rmtree(lock, ignore_errors=True)
