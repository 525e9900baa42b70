"""Where no package index answers (a TPU VM, an air-gapped cluster): the driver says in one
line which releases it cannot install and why, at once, and measures what is installed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import REPO

# Nothing listens there: a connection is refused at once, as on a machine with no route.
UNREACHABLE = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
               "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
               "NO_PROXY": "", "no_proxy": "", "UV_OFFLINE": "1"}


def offline(*args: str, cache) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "jaxbisect", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **UNREACHABLE, "JAX_SCAN_REPRO_CACHE": str(cache)})
    return done, time.monotonic() - started


def test_nothing_cached_and_no_index_is_one_line(tmp_path):
    done, seconds = offline("--from", "0.5.0", "--to", "0.10.2", "--reports",
                            str(tmp_path / "reports"), cache=tmp_path / "cache")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("python -m bisect: error: cannot install jax 0.5.0 … 0.10.2 here: "
                           "no package index is reachable (")
    assert line.endswith("and no release catalogue is cached") or "python -m repro" in line
    assert seconds < 30  # refused, never waited on


def test_a_cached_catalogue_without_the_environments_names_the_releases(recorded_catalogue,
                                                                        tmp_path):
    cache = os.environ["JAX_SCAN_REPRO_CACHE"]  # the catalogue, as PyPI once answered
    done, _ = offline("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                      "--refresh-catalogue", "--reports", str(tmp_path / "reports"),
                      cache=cache)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    warning, line = done.stderr.strip().splitlines()
    assert warning.startswith("warning: cannot reach PyPI")
    assert line.startswith("python -m bisect: error: cannot install jax 0.5.0, 0.5.1 here: no "
                           "package index is reachable (")
    assert not (tmp_path / "reports").exists()
