"""The explanation and the minimizer judge a noisy metric as the search does: the paired test
on interleaved runs (comparing.compare_settings), over simulated busy machines
(tests/noise_models.py) in a fake lab. Its undecided answer is "cannot tell", never "the same"
or "no change"."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fake_lab import FakeLab, _Version
from noise_models import MODELS

from jaxbisect.evidence.explain import behaviour_under, explain_release
from jaxbisect.lab import backends
from jaxbisect.lab.runs import store_key
from jaxbisect.lab.store import COMPLETE, Store
from jaxbisect.search.comparing import compare_settings, reduce_for
from jaxbisect.search.placing import Behaviour, Verdict
from jaxbisect.search.question import Question, Run, question_from
from jaxbisect.stages.minimize import minimal_document, minimize
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CPU = backends.get("cpu")

CASE = str(Path(__file__).resolve().parents[1] / "repro" / "cases"
           / "batched_solve_cpu_slowdown.py")
PASSES = ("slow-pass", "idle-pass")


def timing() -> Question:
    return question_from("run_time", CASE, [], ())


def noisy_lab(truth, model, seed, tmp_path) -> FakeLab:
    """Run k of a question under a release: its true time (``truth(version, xla_flags)``)
    times the machine's load at that moment (one load series for every run, in the order the
    runs are made)."""
    load = model(random.Random(seed))
    made: list[tuple[str, str, int]] = []

    def answer(version: str, question: Question, number: int) -> Run:
        made.append((version, question.xla_flags, number))
        return Run(release=version, number=number, status="ok",
                   samples=(truth(version, question.xla_flags) * load(len(made)),))

    lab = FakeLab(answer, Store(tmp_path / "store"))
    lab.made = made
    return lab


def compared(ratio: float, model, seed: int, max_runs: int | None = None) -> str:
    load = model(random.Random(seed))
    made = [0]

    def run(figure):
        def at(k: int) -> Run:
            made[0] += 1
            return Run(release="x", number=k, status="ok", samples=(figure * load(made[0]),))
        return at

    q = timing()
    return compare_settings(run(1e-3), run(1e-3 * ratio), q, None, batch=5, max_runs=max_runs,
                            reduce=reduce_for(q)).verdict


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_doubled_time_is_never_called_the_same(name):
    seen = [compared(2.0, MODELS[name], seed) for seed in range(60)]
    # the rest: cannot tell
    assert Verdict.SAME not in seen and seen.count(Verdict.CHANGED) >= 40, seen


@pytest.mark.parametrize("name", ["iid", "modes", "drifting"])
def test_equal_settings_are_rarely_called_changed(name):
    seen = [compared(1.0, MODELS[name], seed) for seed in range(60)]
    assert seen.count(Verdict.CHANGED) <= 2, seen


def test_too_few_pairs_to_decide_is_cannot_tell_never_the_same():
    """Four pairs under 10 % noise cannot put equal settings within 10 % of each other."""
    seen = [compared(1.0, MODELS["iid"], seed, max_runs=4) for seed in range(40)]
    assert set(seen) <= {Verdict.CANNOT_TELL, Verdict.CHANGED}
    assert seen.count(Verdict.CANNOT_TELL) >= 35, seen


def hold_pass_dumps(lab: FakeLab, version: str, question: Question,
                    backend: str = "cpu") -> None:
    """The per-pass dumps the explanation reads (explain.pass_dumps), in the lab's store."""
    folder = lab.store.folder(store_key(question, _Version(version), backend, "passes"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lowered.txt").write_text("module @jit_solve {\n}\n")
    for k, name in enumerate(PASSES, 1):
        (folder / f"module_0001.jit_solve.{k:04d}.opt.after_{name}.before_next.txt").write_text(
            f"HloModule jit_solve, pass {k}\n")
    (folder / COMPLETE).write_text("")


@pytest.mark.parametrize("name", ["iid", "drifting", "bursts"])
def test_explain_release_names_the_pass_that_halves_the_time(name, tmp_path):
    def truth(version, flags):
        return 0.5e-3 if "slow-pass" in flags else 1e-3

    q, seen = timing(), []
    for seed in range(5):
        lab = noisy_lab(truth, MODELS[name], f"{name} {seed}", tmp_path / str(seed))
        hold_pass_dumps(lab, "0.5.0", q)
        doc = explain_release(lab, _Version("0.5.0"), CPU, q, lambda m: None)
        tests = {t["xla_flags"].split("=")[1]: t for t in doc["tests"]}
        seen.append((tests["slow-pass"]["verdict"], tests["idle-pass"]["verdict"]))
        if tests["slow-pass"]["verdict"] == Verdict.CHANGED:
            assert tests["slow-pass"]["direction"] == "fix"
            assert (doc["culprit"]["kind"], doc["culprit"]["name"]) == ("pass", "slow-pass")
        assert {w["xla_flags"] for w in doc["workarounds"]} <= {
            "--xla_disable_hlo_passes=slow-pass"}
        # Each pair is two runs made one after the other: the release with every pass is
        # run again beside each test, never compared with runs made long before.
        with_every_pass = [k for _, flags, k in lab.made if flags == ""]
        assert len(with_every_pass) == len(set(with_every_pass)) > 5
    slow, idle = zip(*seen)
    assert Verdict.SAME not in slow and slow.count(Verdict.CHANGED) >= 4, seen
    assert idle.count(Verdict.CHANGED) <= 1, seen


def test_explain_release_cannot_tell_within_a_few_pairs(tmp_path):
    lab = noisy_lab(lambda version, flags: 1e-3, MODELS["iid"], 7, tmp_path)
    q = timing()
    hold_pass_dumps(lab, "0.5.0", q)
    doc = explain_release(lab, _Version("0.5.0"), CPU, q, lambda m: None, max_runs=4)
    verdicts = [t["verdict"] for t in doc["tests"]]
    assert Verdict.CHANGED not in verdicts and Verdict.CANNOT_TELL in verdicts
    assert doc["culprit"]["kind"] == "none" and doc["workarounds"] == []
    assert "cannot tell" in doc["culprit"]["text"]


def test_minimize_starting_undecided_is_cannot_tell_not_lost(tmp_path):
    lab = noisy_lab(lambda version, flags: 1e-3, MODELS["iid"], 3, tmp_path)
    q = timing()
    old, new = _Version("0.4.31"), _Version("0.4.33")
    shrunk, first, names = minimize(old, new, CPU, q, lab, lambda m: None, max_runs=4)
    assert (first.kept, first.verdict) == (False, Verdict.CANNOT_TELL)
    doc = minimal_document(shrunk, first, names, q, old, new, "s")
    assert (doc["kept_at_start"], doc["at_start"]) == (False, Verdict.CANNOT_TELL)


def test_minimize_keeps_a_doubled_time_judged_in_pairs(tmp_path):
    lab = noisy_lab(lambda version, flags: 2e-3 if version == "0.4.33" else 1e-3,
                    MODELS["drifting"], 5, tmp_path)
    q = timing()
    _, first, _ = minimize(_Version("0.4.31"), _Version("0.4.33"), CPU, q, lab,
                           lambda m: None, budget=0)
    assert (first.kept, first.verdict) == (True, "kept")
    # interleaved: the two releases alternate, one run of each at a time
    versions = [v for v, _, _ in lab.asked[:8]]
    assert all(versions[i] != versions[i + 1] for i in range(0, 8, 2))


def test_a_flag_in_a_noisy_bisection_is_placed_in_rounds_beside_the_pair(recorded_catalogue,
                                                                         tmp_path):
    """The bisection's explanation of a timing: a flag that brings 0.5.1's time back is
    "old"; one that leaves it halfway, within a few rounds, is "cannot tell"."""
    def truth(version, flags):
        if version != "0.5.1":
            return 1e-3
        return {"--xla_foo=false": 1e-3, "--xla_bar=1": 1.41e-3}.get(flags, 2e-3)

    lab = noisy_lab(truth, MODELS["iid"], 11, tmp_path)
    request = MetricRequest(start="0.4.35", end="0.5.1", backend="cpu", question=timing(),
                            max_runs=6)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert b.search.status == "found" and str(b.pair[1].version) == "0.5.1"
    back = behaviour_under(b, lab, None, b.pair[1], "--xla_foo=false", lambda m: None)
    assert back["behaviour"] == "old"
    asked = len(lab.asked)
    half = behaviour_under(b, lab, None, b.pair[1], "--xla_bar=1", lambda m: None, beside=1)
    assert half["behaviour"] == Behaviour.CANNOT_TELL and half["runs"] == 6
    # rounds: the pair's old release, the setting, the pair's new release, one after another
    assert {v for v, _, _ in lab.asked[asked:asked + 3]} == {str(b.pair[0].version), "0.5.1"}
