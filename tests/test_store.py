"""The one store: a result is run once, read back after; what may go away is run again."""

from __future__ import annotations

import json

from jaxbisect.files import keep_if_steady, texts_of, write_json, write_json_if_changed
from jaxbisect.lab.store import Key, Store

KEY = Key("0.5.0", "cpu", "probe", {"n_res": 8}, "abc123")


def counting(result):
    calls = []

    def run():
        calls.append(1)
        return result

    return run, calls


def test_a_stored_result_is_read_back_and_measures_nothing(tmp_path):
    store = Store(tmp_path)
    run, calls = counting({"verdict": "constant"})
    assert store.get_or_run(KEY, run) == {"verdict": "constant"}
    assert store.get_or_run(KEY, run) == {"verdict": "constant"}
    assert len(calls) == 1
    path = store.path(KEY)  # the layout and the key's name as every earlier run stored them
    assert path == tmp_path / "cpu" / "jax-0.5.0" / "probe-58692f213c000c23.json"
    assert store.folder(KEY) == path.with_suffix("")
    assert json.loads(path.read_text()) == {"verdict": "constant"}


def test_remeasure_ignores_and_replaces_what_is_stored(tmp_path):
    store = Store(tmp_path)
    store.put(KEY, {"verdict": "old"})
    run, calls = counting({"verdict": "new"})
    assert store.get_or_run(KEY, run, remeasure=True) == {"verdict": "new"}
    assert store.read(KEY) == {"verdict": "new"} and len(calls) == 1


def test_what_may_go_away_is_not_stored(tmp_path):
    store = Store(tmp_path)
    run, calls = counting({"error": "timed out"})
    store.get_or_run(KEY, run, keep=lambda value: False)
    store.get_or_run(KEY, run, keep=lambda value: False)
    assert len(calls) == 2 and not store.path(KEY).exists()


def test_a_stored_result_the_decoder_refuses_is_measured_again(tmp_path):
    store = Store(tmp_path)
    store.put(KEY, {"error": "cannot import JAX here"})
    run, calls = counting({"verdict": "constant"})
    decode = lambda d: None if "error" in d else d  # noqa: E731
    assert store.get_or_run(KEY, run, decode=decode) == {"verdict": "constant"}
    assert store.get_or_run(KEY, run, decode=decode) == {"verdict": "constant"}
    assert len(calls) == 1


def test_every_part_of_the_key_names_another_result(tmp_path):
    store = Store(tmp_path)
    others = [Key("0.5.1", "cpu", "probe", {"n_res": 8}, "abc123"),
              Key("0.5.0", "cuda12", "probe", {"n_res": 8}, "abc123"),
              Key("0.5.0", "cpu", "metric", {"n_res": 8}, "abc123"),
              Key("0.5.0", "cpu", "probe", {"n_res": 9}, "abc123"),
              Key("0.5.0", "cpu", "probe", {"n_res": 8}, "def456")]
    paths = {store.path(k) for k in [KEY, *others]}
    assert len(paths) == 6


def test_a_folder_is_made_once_and_only_marked_whole_after(tmp_path):
    store = Store(tmp_path)
    made = []

    def make(folder):
        made.append(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lowered.txt").write_text("module @m")

    def broken(folder):
        raise RuntimeError("the harness failed")

    other = Key("0.5.1", "cpu", "hlo")
    try:
        store.get_or_make_folder(other, broken)
    except RuntimeError:
        pass
    assert not (store.folder(other) / ".complete").exists()
    folder = store.get_or_make_folder(KEY, make)
    assert store.get_or_make_folder(KEY, make) == folder and len(made) == 1
    assert (folder / "lowered.txt").read_text() == "module @m"
    store.get_or_make_folder(KEY, make, remeasure=True)
    assert len(made) == 2


def test_a_report_written_in_steps_is_left_as_it_was_when_only_volatile_parts_moved(tmp_path):
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    md.write_text("# answer\ndate: 2026-12-01 07:00 UTC\n")
    js.write_text(json.dumps({"status": "found", "seconds": 1.0, "budget": {"spent": 3.0}}))
    before = texts_of([md, js, tmp_path / "absent.md"])
    md.write_text("# answer\n")  # the answer first, its explanation after
    md.write_text("# answer\ndate: 2026-12-03 08:00 UTC\n")
    js.write_text(json.dumps({"status": "found", "seconds": 2.0, "budget": {"spent": 0.1}}))
    keep_if_steady(before)
    assert (md.read_text(), json.loads(js.read_text())) == (
        "# answer\ndate: 2026-12-01 07:00 UTC\n",
        {"status": "found", "seconds": 1.0, "budget": {"spent": 3.0}})
    js.write_text(json.dumps({"status": "alike", "seconds": 1.0, "budget": {"spent": 3.0}}))
    keep_if_steady(before)  # another answer is kept
    assert json.loads(js.read_text())["status"] == "alike"


def test_a_json_that_differs_only_in_the_toolkit_commit_or_timings_is_not_rewritten(tmp_path):
    js = tmp_path / "r.json"
    machine = "cores: 2\npython (driver): 3.11.7\ntoolkit commit: {}"
    first = {"status": "found", "machine": machine.format("4c98c9c"), "seconds": 1.0}
    write_json(js, first)
    again = {**first, "machine": machine.format("c909e37"), "seconds": 9.0}
    assert not write_json_if_changed(js, again)  # a rerun at a later commit: the same answer
    assert json.loads(js.read_text()) == first
    moved = {**again, "machine": machine.replace("cores: 2", "cores: 16").format("c909e37")}
    assert write_json_if_changed(js, moved)  # another machine is not volatile
    assert json.loads(js.read_text()) == moved
