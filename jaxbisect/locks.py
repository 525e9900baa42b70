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


@contextmanager
def held(lock: Path, *, on_wait: Callable[[dict | None], None] = lambda who: None,
         poll: float = 0.5, beat: float = BEAT, stale: float = STALE) -> Iterator[None]:
    """Hold ``lock`` (a folder path) for the ``with`` block; threads of one process exclude
    each other too. ``on_wait``: called once, with the holder, when another holds it."""
    me = {"host": socket.gethostname(), "pid": os.getpid(),
          "thread": threading.get_ident(), "since": time.time()}
    waited = False
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
        if not waited:
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
