"""The flag search's stored sentence (evidence/explain.py explain_flags) on a fake lab of
shapes: a setting that gave no figure, or was never run, leaves the answer "cannot tell",
never "No XLA flag explains it" (needs-b 2); settings that all told "new" say no."""

from __future__ import annotations

import pytest
from fake_lab import FakeLab

from jaxbisect.evidence.explain import explain_flags
from jaxbisect.lab.harness import harness_id
from jaxbisect.lab.store import Key, Store
from jaxbisect.search.question import Run

FLAGS = {"0.4.35": [{"name": "xla_foo", "default": "true", "type": "bool"},
                    {"name": "xla_bar", "default": "1", "type": "int"}],
         "0.4.38": [{"name": "xla_foo", "default": "false", "type": "bool"},
                    {"name": "xla_bar", "default": "2", "type": "int"}]}


def flag_search(recorded_catalogue, tmp_path, under_flag) -> dict:
    """A fix (grows under 0.4.35, constant under 0.4.38) on the a6000 target, its flag search
    with ``under_flag(xla_flags)``: the run a setting of 0.4.38 gives (None: the new shape)."""
    from jaxbisect import cli
    from jaxbisect.pipeline import question_of, request_from
    from jaxbisect.stages.releases import bisect_metric

    def answer(version, q, number):
        if version == "0.4.38" and q.xla_flags and (run := under_flag(q.xla_flags, number)):
            return run
        shape = ["grows", 1.0] if version == "0.4.35" else ["constant", 0.0]
        return Run(release=version, number=number, status="ok", samples=(shape,))

    args, command = cli.parse(["--from", "0.4.35", "--to", "0.4.38", "--target", "a6000"])
    request = request_from(args, question_of(args, command), recorded_catalogue)
    lab = FakeLab(answer, Store(tmp_path / "store"))
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert [str(r.version) for r in b.pair] == ["0.4.35", "0.4.38"]
    platform = request.backend.flags_platform()
    for version, flags in FLAGS.items():
        lab.store.put(Key(version, request.backend, "xla-flags", {"platform": platform},
                          harness_id()), {"status": "ok", "flags": flags})
    return explain_flags(b, lab, lambda m: None)


def failed(version: str, number: int) -> Run:
    return Run(release=version, number=number, status="failed",
               error="the harness could not run it")


@pytest.mark.parametrize("broken", ["--xla_foo=true", "--xla_bar=1"])
def test_a_setting_without_a_figure_is_cannot_tell_never_no(recorded_catalogue, tmp_path,
                                                           broken):
    doc = flag_search(recorded_catalogue, tmp_path,
                      lambda flags, n: failed("0.4.38", n) if broken in flags.split() else None)
    assert doc["kind"] == "none" and doc["name"] is None
    behaviours = {t["xla_flags"]: t["behaviour"] for t in doc["tests"]}
    assert behaviours[broken] == "skip"
    assert "No XLA flag explains it" not in doc["text"]
    assert doc["text"].startswith("Cannot tell whether an XLA flag explains it")
    assert doc["cannot_tell"] == sum(b in ("skip", "cannot tell", "not tested")
                                     for b in behaviours.values()) >= 1


def test_settings_that_all_tell_the_new_figure_say_no(recorded_catalogue, tmp_path):
    doc = flag_search(recorded_catalogue, tmp_path, lambda flags, n: None)
    assert {t["behaviour"] for t in doc["tests"]} == {"new"}
    assert doc["text"].startswith("No XLA flag explains it: none of the 2 changed defaults")
    assert doc["cannot_tell"] == 0
