"""Where a change is, on normalized text (evidence/where.py): metadata, source locations and
names never read as an HLO change, a real op change always does; the attribution on
recorded modules (real XLA dumps and lowerings of jax 0.5.0 and 0.5.1)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.evidence.where import normalize_optimized, where_the_change_is

DATA = Path(__file__).parent / "data"
OPTIMIZED = {v: (DATA / "dumps" / f"jax-{v}" / "after_optimizations.txt").read_text()
             for v in ("0.5.0", "0.5.1")}
LOWERED = {v: (DATA / "lowered" / f"v0-jax-{v}.mlir").read_text() for v in ("0.5.0", "0.5.1")}
INSTRUCTION = re.compile(r"^\s+(ROOT )?%?[\w.\-]+ = ")
_METADATA = re.compile(r', metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')

text_in_quotes = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30).map(
    lambda s: s.replace("\\", "\\\\").replace('"', '\\"'))
metadata = st.builds(
    lambda op, path, line, frame, extra: (
        f'metadata={{op_name="{op}" source_file="{path}" source_line={line}'
        + (f" stack_frame_id={frame}" if frame is not None else "")
        + (f' deduplicated_name="{extra}"' if extra else "") + "}"),
    text_in_quotes, text_in_quotes, st.integers(0, 10**6), st.none() | st.integers(1, 500),
    st.none() | text_in_quotes)
frame_tables = st.lists(st.tuples(st.integers(1, 50), text_in_quotes), max_size=4).map(
    lambda rows: "\n".join(
        ["FileNames", *(f'{i} "{name}"' for i, name in rows),
         "FileLocations",
         *(f"{i} {{file_name_id={i} function_name_id=1 line={i} end_line={i}}}" for i, _ in rows),
         "StackFrames", *(f"{i} {{file_location_id={i} parent_frame_id=1}}" for i, _ in rows)]))


def instruction_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if INSTRUCTION.match(line)]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), version=st.sampled_from(["0.5.0", "0.5.1"]), tables=frame_tables,
       module=st.from_regex(r"jit_[a-z_]{1,12}", fullmatch=True))
def test_metadata_never_changes_the_normalized_text(data, version, tables, module):
    text = OPTIMIZED[version]
    lines = text.splitlines()
    for i in data.draw(st.lists(st.sampled_from(instruction_lines(text)), max_size=12)):
        line = _METADATA.sub("", lines[i])
        lines[i] = line + ", " + data.draw(metadata)          # new, changed or added
    lines[0] = re.sub(r"^HloModule [\w.\-]+", f"HloModule {module}", lines[0])
    edited = "\n".join(lines) + "\n\n" + tables + "\n"
    assert normalize_optimized(edited) == normalize_optimized(text)


OP_CHANGES = [("cosine(", "sine("), ("constant(1)", "constant(2)"),
              ("direction=LT", "direction=GT"),
              ("f32[4,4,4]{2,1,0} multiply", "f32[4,4,4]{0,1,2} multiply")]


@settings(max_examples=100, deadline=None)
@given(data=st.data(), version=st.sampled_from(["0.5.0", "0.5.1"]),
       change=st.sampled_from(OP_CHANGES), noise=metadata)
def test_a_real_op_change_always_shows(data, version, change, noise):
    text = OPTIMIZED[version]
    lines = text.splitlines()
    where = [i for i in instruction_lines(text) if change[0] in lines[i]]
    i = data.draw(st.sampled_from(where))
    lines[i] = _METADATA.sub("", lines[i].replace(change[0], change[1], 1)) + ", " + noise
    assert normalize_optimized("\n".join(lines)) != normalize_optimized(text)


def test_a_changed_backend_config_shows_unless_it_only_names_things():
    line = ('  %f = f32[4]{0} fusion(f32[4]{0} %p), kind=kLoop, calls=%c, '
            'backend_config={"name":"fusion.3","outer_dimension_partitions":["2"]}')
    renamed = line.replace('"fusion.3"', '"fusion.17"')
    tiled = line.replace('["2"]', '["4"]')
    assert normalize_optimized(renamed) == normalize_optimized(line)
    assert normalize_optimized(tiled) != normalize_optimized(line)


def with_other_metadata(text: str) -> str:
    """The same module as another checkout would print it: other source paths and lines,
    stack frames, another module name."""
    out = []
    for n, line in enumerate(text.splitlines()):
        line = line.replace("/work/main/repro/variants.py", "/home/someone/jax/variants.py")
        line = re.sub(r"source_line=\d+", f"source_line={n}", line)
        line = line.replace("HloModule jit_outer_loop", "HloModule jit_outer_loop_1")
        out.append(line.replace("metadata={", f"metadata={{stack_frame_id={n} "))
    return "\n".join(out) + '\n\nFileNames\n1 "/home/someone/jax/variants.py"\nStackFrames\n1 ' \
        '{file_location_id=1 parent_frame_id=1}\n'


def test_same_lowering_and_metadata_only_hlo_is_below_hlo():
    """A compile-time regression whose optimized HLO differs only in metadata: below HLO,
    with no difference to show."""
    where = where_the_change_is(LOWERED["0.5.0"], LOWERED["0.5.1"], OPTIMIZED["0.5.1"],
                                with_other_metadata(OPTIMIZED["0.5.1"]))
    assert with_other_metadata(OPTIMIZED["0.5.1"]) != OPTIMIZED["0.5.1"]
    assert (where["lowering"], where["optimized_hlo"], where["culprit"]) == (
        "identical", "identical", "below-hlo")
    assert where["first_difference"] == []


def test_same_lowering_and_a_real_hlo_change_is_xla_with_its_first_difference():
    where = where_the_change_is(LOWERED["0.5.0"], LOWERED["0.5.1"], OPTIMIZED["0.5.0"],
                                OPTIMIZED["0.5.1"])
    assert (where["lowering"], where["optimized_hlo"], where["culprit"]) == (
        "identical", "differs", "xla")
    shown = [line for line in where["first_difference"] if line[:1] in "+-"
             and not line.startswith(("+++", "---"))]
    assert shown and not any("metadata" in line or "source_file" in line for line in shown)



HLO = DATA / "hlo"


def test_real_stack_frame_tables_and_an_empty_renamed_field_are_not_an_hlo_change():
    """jax 0.10.2 prints source paths in a FileNames table: the same program run from
    another folder differs there only (the rule before issue 26 read it as XLA's passes).
    0.10.1 → 0.10.2 adds one empty backend-config field renamed: below HLO all the same."""
    here = (HLO / "scan_growth-jax-0.10.2-optimized.txt").read_text()
    elsewhere = (HLO / "scan_growth-jax-0.10.2-elsewhere-optimized.txt").read_text()
    assert here != elsewhere and "FileNames" in here and "stack_frame_id=" in here
    assert normalize_optimized(here) == normalize_optimized(elsewhere)
    where = where_the_change_is(
        (HLO / "scan_growth-jax-0.10.1-lowered.mlir").read_text(),
        (HLO / "scan_growth-jax-0.10.2-elsewhere-lowered.mlir").read_text(),
        (HLO / "scan_growth-jax-0.10.1-optimized.txt").read_text(), elsewhere)
    assert (where["lowering"], where["optimized_hlo"], where["culprit"]) == (
        "identical", "identical", "below-hlo")
    # The loop's real configuration still counts: a changed trip-count hint is a difference.
    hinted = elsewhere.replace('"known_init_step":{"init":"0","step":"1"}',
                               '"known_init_step":{"init":"0","step":"2"}', 1)
    assert normalize_optimized(hinted) != normalize_optimized(elsewhere)


def _changed(diff: list[str]) -> tuple[list[str], list[str]]:
    body = [line for line in diff if not line.startswith(("---", "+++", "@@"))]
    return ([line[1:] for line in body if line.startswith("-")],
            [line[1:] for line in body if line.startswith("+")])


@settings(max_examples=200, deadline=None)
@given(prefix=st.tuples(st.text("abc(){}, =%.0123456789", min_size=1, max_size=12),
                       st.integers(0, 80)).map(lambda piece: piece[0] * piece[1]),
       old_tail=st.text("xyz[]", min_size=0, max_size=300),
       new_tail=st.text("xyz[]", min_size=0, max_size=300),
       context=st.lists(st.text("abcdefgh ", min_size=1, max_size=300), max_size=3))
def test_two_differing_lines_are_recorded_differing_however_long_their_shared_prefix(
        prefix, old_tail, new_tail, context):
    """needs-b 1: the first difference keeps each changed line around its first differing
    character, within MAX_LINE_CHARS; two lines cut at a shared prefix never read equal
    (before: both cut at 200 characters, the A6000 0.10.2 → 0.12.0.1 report's two equal
    lines)."""
    from jaxbisect.evidence.common import MAX_LINE_CHARS
    from jaxbisect.evidence.where import first_difference

    old_line, new_line = prefix + old_tail, prefix + new_tail
    if old_line == new_line:
        return
    diff = first_difference([*context, old_line, *context], [*context, new_line, *context])
    removed, added = _changed(diff)
    assert len(removed) == len(added) == 1
    assert removed != added
    assert all(len(line) <= MAX_LINE_CHARS for line in diff)
    for kept, whole in ((removed[0], old_line), (added[0], new_line)):
        assert kept.strip("…") in whole


def test_a_real_difference_past_200_characters_is_recorded_where_it_is():
    prefix = "fusion.#1 = f32[8,128]{1,0} fusion(p.#0), kind=kLoop, calls=fused.#2, " * 4
    old = ["HloModule m", prefix + 'backend_config={"tile":[8,128]}', "ROOT r = tuple()"]
    new = ["HloModule m", prefix + 'backend_config={"tile":[8,256]}', "ROOT r = tuple()"]
    from jaxbisect.evidence.where import first_difference

    removed, added = _changed(first_difference(old, new))
    assert removed[0].endswith('"tile":[8,128]}') and added[0].endswith('"tile":[8,256]}')


def test_a_modules_fingerprint_is_never_its_first_real_difference():
    """Newer XLA prints a hash of the whole module in its header: it differs wherever anything
    does, so the first difference shown is the first line that really differs."""
    from jaxbisect.evidence.where import first_difference, normalize_optimized

    def module(fingerprint: str, body: str) -> str:
        return (f'HloModule jit_f, entry_computation_layout={{(f32[8])->f32[8]}}, '
                f'frontend_attributes={{fingerprint_before_lhs="{fingerprint}"}}\n\n'
                f'ENTRY %main.1 (p.1: f32[8]) -> f32[8] {{\n  %p.1 = f32[8] parameter(0)\n'
                f'  ROOT %r.2 = f32[8] {body}(f32[8] %p.1)\n}}\n')

    old = normalize_optimized(module("64e337bae0086e79", "negate"))
    new = normalize_optimized(module("cd4c93a35fb28d5f", "exponential"))
    changed = [line for line in first_difference(old, new)
               if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    assert changed == ["-ROOT r.#2 = f32[8] negate(f32[8] p.#1)",
                       "+ROOT r.#2 = f32[8] exponential(f32[8] p.#1)"]
    assert normalize_optimized(module("64e3", "negate")) == normalize_optimized(
        module("cd4c", "negate"))
