"""TPU environments at jax 0.5.3, 0.6.0 and 0.6.1 get absl-py (needs-c 7): there
``import jax.experimental.pallas`` needs it and nothing else installs it, so without it a
bisection took the environment's ModuleNotFoundError for the program's behaviour (0.6.1 →
0.7.0 "found", not exact). The plan is read with libtpu's pins faked (tests/test_tpu.py's
index of wheel-shaped zips)."""

from __future__ import annotations

import pytest
from test_tpu import Index, backend, release, wheel

PINNED = ("0.5.2", "0.5.3", "0.6.0", "0.6.1", "0.6.2", "0.7.0")
WHEELS = {f"jax-{v}-py3-none-any.whl": wheel(v, ["libtpu==0.0.17"]) for v in PINNED}
LIBTPU = {"0.0.17": "2025-01-10T00:00:00Z"}


@pytest.mark.parametrize("version, absl", [("0.5.2", False), ("0.5.3", True), ("0.6.0", True),
                                           ("0.6.1", True), ("0.6.2", False), ("0.7.0", False)])
def test_the_releases_whose_pallas_needs_absl_install_it(tmp_path, version, absl):
    tpu = backend(tmp_path, Index(WHEELS, LIBTPU))
    plan = tpu.install_plan(release(version))
    assert plan.requirements[:3] == (f"jax=={version}", f"jaxlib=={version}", "libtpu==0.0.17")
    assert plan.requirements[3:] == (("absl-py",) if absl else ())
    assert plan.date_exempt == ("libtpu",)  # absl-py is resolved as of the release's day
