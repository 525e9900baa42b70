"""The commit-level check's two figures are the ones the report's table shows for the last
old and the first new release (the probe's figure), not another median of raw samples."""

from jaxbisect.evidence.explain import check_argv
from jaxbisect.lab.catalogue import load_catalogue
from jaxbisect.report.figures import figure, seen
from jaxbisect.search.classify import Direction, Ends
from jaxbisect.search.placing import MetricSearch, Placed
from jaxbisect.search.question import Run, question_from
from jaxbisect.search.rounds import SearchResult
from jaxbisect.stages.releases import MetricBisection, MetricRequest

CASE = "repro/cases/while_loop_cpu_slowdown.py"


def test_a_noisy_check_uses_the_figure_the_table_shows():
    q = question_from("run_time", CASE, [], ())
    assert q.noisy
    releases = tuple(load_catalogue().get(v) for v in ("0.4.30", "0.4.31"))
    # Each run's calls (samples) and the one figure a run the classifier compared (values):
    # the raw samples' median (0.0002, 0.05) is not what the table shows.
    placed = {
        0: Placed(0, (Run(release="0.4.30", number=1, status="ok",
                          samples=(0.0001, 0.0002, 0.0009)),
                      Run(release="0.4.30", number=2, status="ok",
                          samples=(0.00012, 0.0003, 0.0008))), values=(0.0001, 0.00012)),
        1: Placed(1, (Run(release="0.4.31", number=1, status="ok", samples=(0.03, 0.05, 0.09)),
                      Run(release="0.4.31", number=2, status="ok",
                          samples=(0.031, 0.06, 0.07))), values=(0.03, 0.031)),
    }
    b = MetricBisection(MetricRequest("0.4.30", "0.4.31", "cpu", q), releases, (),
                        MetricSearch("found", SearchResult("found", 0, 1, True, (0, 1), ()),
                                     placed, None))
    argv = check_argv(b)
    at = argv.index("--check")
    shown = [figure(q.metric, seen(q, placed[i]))["median"] for i in (0, 1)]
    assert [float(f) for f in argv[at + 1:at + 3]] == shown == [0.00011, 0.0305]


def error_bisection(old_error: str, new_error: str) -> MetricBisection:
    q = question_from("error", CASE, [], ())
    releases = tuple(load_catalogue().get(v) for v in ("0.4.30", "0.4.31"))
    placed = {i: Placed(i, (Run(release=v, number=1, status="ok", samples=(f,)),), values=(f,))
              for i, (v, f) in enumerate((("0.4.30", old_error), ("0.4.31", new_error)))}
    return MetricBisection(MetricRequest("0.4.30", "0.4.31", "cpu", q), releases, (),
                           MetricSearch("found", SearchResult("found", 0, 1, True, (0, 1), ()),
                                        placed, Ends(True, Direction.CHANGED, None, "differ")))


def test_the_recorded_roles_follow_the_answer_s_direction():
    """An error that goes is a fix: the reproducer's ends and the HLO figures are recorded as
    "last bad" / "first fixed", the words the page gives the pair."""
    from jaxbisect.evidence.hlo_bundle import role_words, side_of

    fix = error_bisection("ValueError: boom", "no error")
    assert fix.direction == "changed" and fix.pair_roles == ("last bad", "first fixed")
    assert error_bisection("no error", "ValueError: boom").pair_roles == ("last good",
                                                                          "first bad")
    # Any recorded pair role (old reports said "last good" for a fix's older release) is
    # shown in the words the page passes.
    for old, new in (("last good", "first bad"), fix.pair_roles):
        assert (side_of(old), side_of(new)) == (0, 1)
        assert role_words(old, fix.pair_roles) == "last bad"
        assert role_words(new, fix.pair_roles) == "first fixed"
    assert side_of("between") is None and role_words("between", fix.pair_roles) == "between"


def test_the_check_names_the_backend_it_measured_on():
    """In NVIDIA's containers the harness's default is the GPU: a CPU answer's check says
    ``--backend cpu``; a compile-only target's check names its target instead."""
    q = question_from("error", CASE, [], ())
    releases = tuple(load_catalogue().get(v) for v in ("0.4.30", "0.4.31"))
    placed = {i: Placed(i, (Run(release=v, number=1, status="ok", samples=(f,)),), values=(f,))
              for i, (v, f) in enumerate((("0.4.30", "no error"), ("0.4.31", "ValueError")))}
    search = MetricSearch("found", SearchResult("found", 0, 1, True, (0, 1), ()), placed, None)
    argv = check_argv(MetricBisection(MetricRequest("0.4.30", "0.4.31", "cpu", q), releases,
                                      (), search))
    assert argv[argv.index("--backend") + 1] == "cpu"
    target = question_from("error", CASE, [], (), target="a6000")
    argv = check_argv(MetricBisection(MetricRequest("0.4.30", "0.4.31", "cuda12-deviceless",
                                                    target), releases, (), search))
    assert "--backend" not in argv and argv[argv.index("--target") + 1] == "a6000"
