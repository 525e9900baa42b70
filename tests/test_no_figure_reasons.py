"""A setting that gave no figure records why (the crash's first line), and modules that could
not be compared say why from the report's record, or that no reason was recorded."""

from pathlib import Path

from jaxbisect.evidence.explain import no_figure_reason
from jaxbisect.report.markdown.commits import agreement
from jaxbisect.report.markdown.sections import attribution_text
from jaxbisect.search.question import Run

REPORTS = Path(__file__).resolve().parents[1] / "reports"
UNKNOWN = {"culprit": "unknown",
           "text": "the lowered StableHLO of the two releases could not be compared"}


def test_a_setting_without_a_figure_records_the_crash_s_first_line():
    runs = (Run(release="0.5.0", number=1, status="crashed",
                error="Check failed: computation is flat\n*** Begin stack trace ***",
                crash="crashed: SIGABRT"),
            Run(release="0.5.0", number=2, status="ok", samples=(1.0,)))
    assert no_figure_reason(runs) == "crashed: SIGABRT"
    raised = (Run(release="0.5.0", number=1, status="raised",
                  error="INTERNAL: Check failed: flat\nmore"),)
    assert no_figure_reason(raised) == "raised: INTERNAL: Check failed: flat"
    assert no_figure_reason((Run(release="0.5.0", number=1, status="failed"),)) is None


def test_modules_not_compared_say_why_or_that_no_reason_was_recorded():
    said = attribution_text({**UNKNOWN, "reason": "no lowered module from the new release"})
    assert said.endswith("could not be compared (no lowered module from the new release).")
    assert attribution_text(UNKNOWN).endswith("(no reason was recorded).")
    doc = {"attribution": UNKNOWN, "metric": {"name": "error"}}
    assert "no reason was recorded" in agreement(doc, {"came_with": "jax"})


def test_the_shipped_page_says_why_its_modules_were_not_compared():
    page = (REPORTS / "cases" / "bisect-0.5.3-0.6.0-cpu-jvp_vmap_symbolic_zero-error-e4b85d1c.md"
            ).read_text()
    assert "could not be compared (no lowered module from the new release)." in page
    assert "The modules could not be compared." not in page
    assert "could not be compared);" not in page
