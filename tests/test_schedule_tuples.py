"""The schedule listing follows stacked buffers made as elements of a tuple-shaped value (a
multi-output fusion), and never says 0 for a loop whose stacked state it did not trace."""

import json
import re
from pathlib import Path

from jaxbisect.evidence.schedule import schedule_summary
from jaxbisect.report.markdown.evidence import schedule_lines

REPO = Path(__file__).resolve().parents[1]
A6000 = REPO / "reports" / "bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json"
STATE = "(s32[], f32[32,32,32]{2,1,0}, f32[100,32,32,32]{3,2,1,0})"
ENTRY = f"""HloModule m

ENTRY %main () -> f32[32,32,32] {{
  %c = s32[] constant(0)
  %p = f32[32,32,32]{{2,1,0}} parameter(0)
  %fusion = (f32[100,32,32,32]{{3,2,1,0}}, f32[100,32,32,32]{{3,2,1,0}}) fusion(), kind=kLoop
  %gte.1 = f32[100,32,32,32]{{3,2,1,0}} get-tuple-element(%fusion), index=0
  %gte.2 = f32[100,32,32,32]{{3,2,1,0}} get-tuple-element(%fusion), index=1
  %tuple.4 = {STATE} tuple(%c, %p, %gte.1)
  %while.16 = {STATE} while(%tuple.4), condition=%cond, body=%body
  %gte.5 = f32[32,32,32]{{2,1,0}} get-tuple-element(%while.16), index=1
  %tuple.8 = {STATE} tuple(%c, %gte.5, %gte.2)
  %while.21 = {STATE} while(%tuple.8), condition=%cond, body=%body
  %gte.6 = f32[100,32,32,32]{{3,2,1,0}} get-tuple-element(%while.16), index=2
  %gte.7 = f32[100,32,32,32]{{3,2,1,0}} get-tuple-element(%while.21), index=2
  ROOT %t = (f32[100,32,32,32]{{3,2,1,0}}, f32[100,32,32,32]{{3,2,1,0}}) tuple(%gte.6, %gte.7)
}}
"""


def loop_counts(lines: list[str]) -> dict[str, str]:
    return {line.split()[1].rstrip(":"): line.rsplit("stacked buffers live: ", 1)[1]
            for line in lines if ": loop " in line}


def test_a_multi_output_fusion_s_buffers_are_counted_at_each_loop():
    lines = schedule_summary(ENTRY, 100, (32, 32, 32))
    assert "creates 2 stacked buffers" in lines[1]
    # Both elements are made before the first loop and used after the second starts.
    assert loop_counts(lines) == {"while.16": "2", "while.21": "2"}


def test_a_loop_state_from_a_value_not_followed_is_not_counted_0():
    text = ENTRY.replace("while(%tuple.4)", "while(%fusion)")
    counts = loop_counts(schedule_summary(text, 100, (32, 32, 32)))
    assert counts["while.16"].startswith("not traced (1 carried in")
    shown = schedule_lines(schedule_summary(text, 100, (32, 32, 32)))
    assert any("while.16" in line and "not counted" in line for line in shown)


def test_the_shipped_a6000_listing_does_not_say_0_for_loops_holding_stacked_state():
    """jax 0.11.2 held 3 stacked buffers at the peak; its loops' state comes in from a value
    the listing does not follow: the record says "not traced", the page "not counted". A
    record made before tuple-shaped values were followed counted 0 there: its page says the
    same."""
    old = json.loads(A6000.read_text())["evidence"]["releases"]["old"]
    assert sum("stacked buffers live: not traced" in line for line in old["schedule"]) == 3
    before = [re.sub(r"stacked buffers live: not traced .*$", "stacked buffers live: 0", line)
              for line in old["schedule"]]
    for schedule in (old["schedule"], before):
        shown = schedule_lines(schedule, old["raw"]["after_optimizations"])
        loops = [line for line in shown if ": loop " in line]
        assert len(loops) == 3 and all("not counted" in line for line in loops)
        assert not any(line.endswith("used after its start: 0") for line in shown)


def test_a_header_never_counts_0_at_loops_it_does_not_follow():
    from jaxbisect.evidence.schedule import stacked_words

    assert "not counted" in stacked_words("[4,2]", 0, 3, 3) and "at most" not in \
        stacked_words("[4,2]", 0, 3, 3)
    assert "at most 1 at the 1 loop it follows (the other 2 not counted)" in stacked_words(
        "[4,2]", 1, 3, 2)
    assert "at most 2 (" in stacked_words("[4,2]", 2, 3, 0)
    old = json.loads(A6000.read_text())["evidence"]["releases"]["old"]
    for header in (old["schedule"][0],  # today's, and an older record's words for it
                   "entry computation: 19 instructions, 3 while loops; stacked [100,32,32,32] "
                   "buffers live at a loop's start: at most 0"):
        shown = schedule_lines([header, *old["schedule"][1:]], old["raw"]["after_optimizations"])
        assert "at most" not in shown[0] and "not counted (no loop's" in shown[0]


def test_a_loop_not_traced_is_said_once():
    old = json.loads(A6000.read_text())["evidence"]["releases"]["old"]
    shown = schedule_lines(old["schedule"], old["raw"]["after_optimizations"])
    loops = [line for line in shown if ": loop " in line]
    assert loops and all(line.count("could not be followed back") == 1 for line in loops)
