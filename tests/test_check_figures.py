"""The commit-level check's two figures are the ones the report's table shows for the last
old and the first new release (the probe's figure), not another median of raw samples."""

from jaxbisect.evidence.explain import check_argv
from jaxbisect.lab.catalogue import load_catalogue
from jaxbisect.report.figures import figure, seen
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
