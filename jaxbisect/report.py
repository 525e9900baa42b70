"""The bisection's answer as a markdown report for a GitHub issue, and as one JSON document."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from tabulate import tabulate

from repro.target import SPEC_SUFFIX, Target, TargetError
from repro.target import load as load_target

from . import standalone
from .catalogue import Release, needs_a_gpu, yanked_words
from .driver import Bisection, Probe
from .files import write_atomic, write_json, write_json_if_changed, write_text_if_changed
from .harness import HarnessOptions, target_label
from .machine import machine_description
from .tables import narrow_columns, results_rows

SCHEMA = 1
JAX_COMPARE = "https://github.com/jax-ml/jax/compare/jax-v{old}...jax-v{new}"


def _who(probe: Probe | None) -> dict | None:
    return None if probe is None else {"jax": str(probe.release.version), "jaxlib": probe.jaxlib}


def _target_shown(target: str) -> str:
    """A built-in target's name; a spec file by its file name (the report holds the spec):
    never a path on this machine."""
    return Path(target).name if "/" in target else target


def spec_file(req) -> Target | None:
    """The request's target when it is a spec file of the user's (not a built-in one)."""
    if not req.options.target or "/" not in req.options.target:
        return None
    try:
        return load_target(req.options.target)
    except TargetError:  # gone since: the stored results still name their device
        return None


def where_measured(b: Bisection) -> str:
    """The backend, or for a target the words every report uses: never mistaken for a run on
    that GPU. A spec file of the user's is named, with the compute capability it gives."""
    spec = spec_file(b.request)
    if spec is not None:
        return (f"compiled for {spec.description} as the spec file {spec.name}{SPEC_SUFFIX} "
                f"describes it (compute capability {spec.compute_capability}), without the GPU")
    target = next((p.measurement.document.get("target") for p in b.probes
                   if p.measurement and p.measurement.document
                   and p.measurement.document.get("target")), None)
    if target:
        return f"compiled for {target['description']}, without the GPU"
    if b.request.options.target:
        return f"target {b.request.options.target}, compiled without the GPU"
    return b.request.backend


def grouped_reasons(unusable) -> list[tuple[str, str]]:
    """Neighbouring releases left out for the same reason, as one line each."""
    groups: list[list] = []
    for release, why in sorted(unusable, key=lambda item: item[0].version):
        if groups and groups[-1][1] == why:
            groups[-1][0].append(release)
        else:
            groups.append([[release], why])
    return [(f"jax {rs[0].version}" if len(rs) == 1 else
             f"jax {rs[0].version} … {rs[-1].version} ({len(rs)} releases)", why)
            for rs, why in groups]


def gpu_commands(b: Bisection) -> list[str]:
    """The command for each part of the range only a real GPU can measure."""
    return [shlex.join(_bisect_argv(b.request, lo, hi, ["--backend", "cuda12"],
                                    leave_out=("target",))) for lo, hi in b.needs_a_gpu]


def answer_line(b: Bisection) -> str:
    r, req = b.result, b.request
    lo, hi = b.measured_part
    ends = f"jax {lo} … {hi} ({where_measured(b)})"
    if r.status == "unmeasurable":
        bad = [p for p in (b.probe_of(0), b.probe_of(len(b.candidates) - 1))
               if p.outcome.value == "skip"]
        why = "; ".join(f"jax {p.release.version}: {p.reason}" for p in bad)
        return f"**No answer for {ends}: an end of the range could not be measured** ({why})."
    if r.status == "alike":
        first = b.probe_of(0)
        what = (f"v0 {first.verdict} in n_outer" if not req.command
                else f"the command exits {first.exit_status}")
        return (f"**No change in {ends}: both ends behave alike** ({what} at jax {lo} "
                f"and at jax {hi}).")
    old, new = b.last_old, b.first_new
    if req.command:
        behaviour = (f"`{shlex.join(req.command)}` exits {old.exit_status} at jax "
                     f"{old.release.version} and {new.exit_status} at jax {new.release.version}")
        kind = "The behaviour changed"
    else:
        words = {"constant": "constant in n_outer", "grows": "growing with n_outer"}
        behaviour = (f"v0's memory is {words[old.verdict]} up to jax {old.release.version} "
                     f"and {words[new.verdict]} from jax {new.release.version} on")
        kind = "Regression" if b.direction == "regression" else "Fix"
    where = (f"between jax {old.release.version} (jaxlib {old.jaxlib}), the last release with "
             f"the old behaviour, and jax {new.release.version} (jaxlib {new.jaxlib}), the first "
             f"with the new")
    if b.gpu_only_between:
        between = [str(r.version) for r in b.gpu_only_between]
        where += (f"; jax {', '.join(between)} in between cannot be compiled without a GPU, "
                  f"so the change is in one of them or in jax {new.release.version}")
    if not r.exact:
        between = [str(c.version) for c in b.candidates[r.last_old + 1:r.first_new]]
        where += (f"; jax {', '.join(between)} in between could not be measured, so the "
                  f"change is in one of them or in jax {new.release.version}")
    return f"**{kind} ({where_measured(b)}) {where}:** {behaviour}."


def yanked_entries(yanked, candidates, probed) -> list[dict]:
    """The yanked releases inside a range, for the JSON: PyPI's reason, whether they were
    candidates (``--include-yanked``) and whether the search measured them."""
    listed = {r.version for r in candidates}
    return [{"jax": str(r.version), "jaxlib": str(r.jaxlib) if r.jaxlib else None,
             "reason": r.yanked_reason, "candidate": r.version in listed,
             "probed": str(r.version) in probed} for r in yanked]


def yanked_markdown(yanked: tuple[Release, ...], candidates, probed: dict[str, str],
                    include_command: str) -> str | None:
    """The line beside the answer that names the yanked releases inside the range: the
    people who installed one before the yank are the ones filing reports about it.
    ``probed``: what each probed release gave, in words, by version."""
    if not yanked:
        return None
    listed = {r.version for r in candidates}
    named = "; ".join(yanked_words(r) for r in yanked)
    if all(r.version in listed for r in yanked):
        shown = [f"jax {r.version}: {probed[str(r.version)]}" for r in yanked
                 if str(r.version) in probed]
        return (f"**Yanked inside the range:** {named}. Measured as a candidate "
                f"(`--include-yanked`)"
                + (f"; probed: {'; '.join(shown)}." if shown else
                   ", though the search did not need to probe it."))
    return (f"**Yanked inside the range:** {named}. It was left out of the search, so this "
            f"answer says nothing of it; to measure it as a candidate too: "
            f"`{include_command}`")


def yanked_line(b: Bisection) -> str | None:
    probed = {str(p.release.version): f"v0 {p.verdict}" if p.mode != "command"
              else f"{p.verdict} (exit status {p.exit_status})" for p in b.probes}
    return yanked_markdown(b.yanked, b.candidates, probed,
                           bisect_command(replace(b.request, include_yanked=True)))


def reproduce_command(b: Bisection) -> str:
    """The command line that asks the same question: every option that changes the result,
    each value glued to its option so that one starting with ``--`` pastes back too."""
    return bisect_command(b.request)


def bisect_command(req, start: str | None = None, end: str | None = None) -> str:
    """Every command a report or the terminal suggests (Reproduce, Next step): the request's
    question over ``start`` … ``end`` (its own ends by default), with every option that
    shaped its answer."""
    return shlex.join(_bisect_argv(req, req.start if start is None else start,
                                   req.end if end is None else end,
                                   [] if req.options.target else ["--backend", req.backend]))


def standalone_releases(b: Bisection) -> list[tuple[str, str]]:
    """(jax, jaxlib) of the releases a maintainer reruns by hand: either side of the change,
    or the two ends where there is none."""
    if b.result.status == "found":
        probes = [b.last_old, b.first_new]
    else:
        probes = [b.probe_of(0), b.probe_of(len(b.candidates) - 1)]
    return [(str(p.release.version), p.jaxlib) for p in probes]


def _on_a_gpu(req) -> bool:
    """Whether a maintainer reruns the report on an NVIDIA GPU (a target's plan, or cuda12)."""
    return bool(req.options.target) or req.backend == "cuda12"


def standalone_markdown(b: Bisection) -> list[str]:
    """The Reproduce section's part that needs no toolkit: pip, python and the program."""
    req = b.request
    gpu, name = _on_a_gpu(req), ""
    if req.options.target:
        spec = spec_file(req)
        name = (spec.description if spec is not None else where_measured(b)
                .removeprefix("compiled for ").removesuffix(", without the GPU"))
    return standalone.markdown(standalone_releases(b), req.options, gpu=gpu, gpu_name=name,
                               command=req.command)


def _bisect_argv(req, start: str, end: str, where: list[str], *,
                 leave_out: tuple[str, ...] = ()) -> list[str]:
    argv = ["python", "-m", "bisect", "--from", start, "--to", end, *where]
    for name, value in req.result_options().items():
        if name == "command" or name in leave_out:
            continue
        option = "--" + name.replace("_", "-")
        if name == "target" and "/" in value:  # a spec file: the report holds it, by name
            value = Path(value).name
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            argv += [f"{option}={v}" for v in value]      # a repeatable option
        elif isinstance(value, tuple):
            argv += [option, *map(str, value)]
        elif isinstance(value, bool):
            argv += [option] if value else []
        elif isinstance(value, str):
            argv.append(f"{option}={value}")
        else:
            argv += [option, str(value)]
    if req.command:
        argv += ["--", *req.command]
    return argv


def machine_environment(b: Bisection) -> str:
    """What a maintainer asks about the probing machine, plus jax's own description."""
    lines = [machine_description(dated=True)]
    newest = next((p for p in reversed(b.probes) if p.measurement and p.measurement.document),
                  None)
    if newest:
        doc = newest.measurement.document
        lines += ["", f"jax.print_environment_info() under jax {doc['jax']}:",
                  str(doc.get("environment") or "").strip(),
                  f"XLA_FLAGS: {doc.get('xla_flags') or '(none)'}"]
    return "\n".join(lines)


MAX_COLUMNS = 10  # what a GitHub issue comment shows without scrolling sideways


def probe_table(b: Bisection) -> str:
    """Every probe, oldest release first, in at most MAX_COLUMNS columns; a wider table is
    shown narrowed, with the whole of it in a collapsed block below."""
    ordered = sorted(b.probes, key=lambda p: p.release.version)
    order = {id(p): i + 1 for i, p in enumerate(b.probes)}
    if b.request.command:
        headers = ["jax", "jaxlib", "exit status", "behaviour", "probe #", "stored"]
        rows = [[str(p.release.version), p.jaxlib, p.exit_status, p.verdict, order[id(p)],
                 "yes" if p.cached else ""] for p in ordered]
        if any(p.reason for p in ordered):
            headers.insert(4, "note")
            for row, p in zip(rows, ordered):
                row.insert(4, p.reason or "")
        return tabulate(rows, headers=headers, tablefmt="github")
    measured = [p for p in ordered if p.measurement]
    extra = {"probe #": [str(order[id(p)]) for p in measured]}
    notes = ["; ".join(_notes(p, b.request.options.n_res)) for p in measured]
    if any(notes):  # no column that would be empty everywhere
        extra["note"] = notes
    headers, rows = results_rows([p.measurement for p in measured], extra=extra,
                                 asked=b.request.options)
    whole = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    if len(headers) <= MAX_COLUMNS:
        return whole
    # A row measured otherwise than the heading says (a real run, at other sizes) keeps its
    # mode cell in sight, and the note that says why.
    mode = headers.index("mode")
    differs = len({row[mode] for row in rows}) > 1
    keep = narrow_columns(headers, MAX_COLUMNS, protect=("mode", "note") if differs else ())
    narrow = tabulate([[row[i] for i in keep] for row in rows],
                      headers=[headers[i] for i in keep], tablefmt="github",
                      disable_numparse=True)
    left_out = ", ".join(h.split(",")[0].replace(" (MB)", "")
                         for i, h in enumerate(headers) if i not in keep)
    return (f"{narrow}\n\n<details><summary>All columns (adds {left_out})</summary>\n\n"
            f"{whole}\n\n</details>")


def _notes(p: Probe, b_n_res: int) -> list[str]:
    notes = []
    if p.unavailable_compiled:
        notes.append(f"compiled stats empty: a real run at n_res {p.measurement.options.n_res}")
    if not p.full_table:
        notes.append("search probe: v0 at n_outer "
                     + ", ".join(map(str, p.measurement.options.n_outer))
                     + (f", n_res {p.measurement.options.n_res}"
                        if p.measurement.options.n_res != b_n_res else ""))
    elif p.table_verdict != p.verdict:
        notes.append(f"the search probe's verdict was {p.verdict}")
    if p.full_error:
        notes.append(f"full table failed: {p.full_error}")
    return notes


def search_line(b: Bisection) -> str:
    """How many probes and rounds the search took, against its limit."""
    probes, rounds = b.limit
    made = len(b.result.rounds)
    jobs = f", up to {b.jobs} at once" if b.jobs > 1 else ""
    size = ""
    if not b.request.command and b.search_n_res != b.request.options.n_res:
        size = (f"; search probes at n_res {b.search_n_res} (the verdict is scale-free; at "
                f"both ends it agreed with the full size)")
    elif b.search_note:
        size = f"; {b.search_note}"
    return (f"{len(b.probes)} probes in {made} round{'' if made == 1 else 's'}{jobs} "
            f"(at most {probes} probes in {rounds} rounds for {len(b.candidates)} candidates "
            f"when none is skipped){size}")


def packages_table(b: Bisection) -> str:
    """Every package recorded in each probed release's environment (its date-resolved set)."""
    probes = sorted((p for p in b.probes if p.installed), key=lambda p: p.release.version)
    names = sorted({name for p in probes for name in p.installed} - {"jax"})
    rows = [[str(p.release.version), *(p.installed.get(n, "") for n in names)] for p in probes]
    return tabulate(rows, headers=["jax", *names], tablefmt="github", disable_numparse=True)


@dataclass(frozen=True)
class NextStep:
    """Where to look when a range holds no change: the same question up to the newest release
    installable here."""

    verdict: str   # v0's verdict at both ends: "constant" or "grows"
    on: str        # where it was measured, in the reports' words
    newest: str    # the newest release installable here
    command: str   # the bisection over the wider range, every option kept


def next_step_markdown(step: NextStep) -> str:
    verdict = {"grows": "growing"}.get(step.verdict, step.verdict)
    return (f"## Next step\n\nv0 is {verdict} at both ends of this range on {step.on}. "
            f"The newest release installable here is jax {step.newest}; to look further:\n\n"
            f"```sh\n{step.command}\n```\n")


def render(b: Bisection, evidence_markdown: str = "", next_step: NextStep | None = None) -> str:
    req, r = b.request, b.result
    o = req.options
    parts = [f"# jax.lax.scan memory: bisection of jax {req.start} … {req.end} "
             f"({where_measured(b)})", "", answer_line(b), ""]
    yanked = yanked_line(b)
    if yanked:
        parts += [yanked, ""]
    if b.needs_a_gpu:
        lo, hi = b.measured_part
        rest = ", ".join(f"jax {a} … {z}" for a, z in b.needs_a_gpu)
        parts += [f"**Measured part: jax {lo} … {hi}.** The rest of the range asked for "
                  f"({rest}) cannot be compiled without a GPU (listed below); on a machine with "
                  f"an NVIDIA GPU, this measures it:", "", "```sh", *gpu_commands(b), "```", ""]
    if r.status == "found":
        old, new = b.last_old, b.first_new
        parts += [f"Compare: {JAX_COMPARE.format(old=old.release.version, new=new.release.version)}",
                  ""]
    what = ("v0 (the report's scan stacking outputs, `x_out[-1]` used) measured as output + temp "
            "of `compiled.memory_analysis()` in MB; \"runtime\" rows are a real run's peak RSS "
            "above baseline where a release's compiled statistics are empty"
            if not req.command else f"the command `{shlex.join(req.command)}`")
    if o.target and not req.command:
        what = ("v0 (the report's scan stacking outputs, `x_out[-1]` used): XLA's plan "
                f"{where_measured(b)}, as output + temp of `compiled.memory_analysis()` in MB, "
                "or of XLA's buffer-assignment dump where a release's memory_analysis() gives "
                "None (before jax 0.6.1); v2 only at n_outer 1 (it unrolls 100 × n_outer ops: "
                "minutes a case to compile for a GPU)")
    full = ""
    if not req.command:
        control = (f"v1 too, and v2, the unrolled control, at n_outer up to {o.v2_up_to}: its "
                   "compile grows with the unrolled length" if o.v2_up_to and not o.target
                   else "v1 and v2 too")
        full = (f" The ends of the range and the releases either side of the change carry the "
                f"full table ({control}); the search's other probes measured v0 at the sizes "
                "its verdict needs.")
    parts += [f"## Releases probed ({len(b.probes)} of {len(b.candidates)} candidates)", "",
              f"Each row: {what}. n_inner {o.n_inner}, n_res {o.n_res}, {o.dtype}"
              + (f", XLA_FLAGS `{o.xla_flags}`" if o.xla_flags else "") + "." + full, "",
              probe_table(b), "", f"Search: {search_line(b)}.", ""]
    skipped = [p for p in b.probes if p.outcome.value == "skip"]
    if skipped or b.unusable:
        parts += ["Skipped or left out:", ""]
        parts += [f"- jax {p.release.version}: {p.reason}" for p in skipped]
        parts += [f"- {which}: {why}" if needs_a_gpu(why) else
                  f"- {which}: not installable here ({why})"
                  for which, why in grouped_reasons(b.unusable)]
        parts.append("")
    parts += ["## Reproduce", "", *standalone_markdown(b),
              "With the toolkit (jax-scan-repro), from a clone of it, in its project "
              "environment (see its README), which installs each release itself:", "", "```sh",
              reproduce_command(b), "```", ""]
    spec = spec_file(req)
    if spec is not None:
        parts += [f"<details><summary>The target spec, <code>{Path(req.options.target).name}"
                  "</code> (save it under that name to run the commands above)</summary>", "",
                  "```text", spec.text.rstrip("\n"), "```", "", "</details>", ""]
    if next_step is not None:
        parts += [next_step_markdown(next_step).rstrip(), ""]
    if evidence_markdown:
        parts += [evidence_markdown.rstrip(), ""]
    if any(p.installed for p in b.probes):
        parts += ["<details><summary>Packages installed in each probed environment "
                  "(resolved as of each release's date)</summary>", "", packages_table(b), "",
                  "</details>", ""]
    parts += ["<details><summary>Environment of the probing machine</summary>", "", "```text",
              machine_environment(b), "```", "", "</details>", ""]
    return "\n".join(parts)


def document(b: Bisection, report_path: Path | None, extra: dict | None = None) -> dict:
    req, r = b.request, b.result
    first, last = b.probe_of(0), b.probe_of(len(b.candidates) - 1)
    skipped = [{"jax": str(p.release.version), "reason": p.reason}
               for p in b.probes if p.outcome.value == "skip"]
    skipped += [{"jax": str(rel.version),
                 "reason": why if needs_a_gpu(why) else f"not installable here: {why}"}
                for rel, why in b.unusable]
    doc = {
        "schema": SCHEMA, "from": req.start, "to": req.end, "backend": req.backend,
        "status": r.status, "direction": b.direction, "exact": b.exact,
        "verdict_from": first.verdict, "verdict_to": last.verdict,
        "last_old": _who(b.last_old), "first_new": _who(b.first_new),
        "probes": [{"jax": str(p.release.version), "jaxlib": p.jaxlib, "verdict": p.verdict,
                    "mode": p.mode, "cached": p.cached, "seconds": p.seconds,
                    "reason": p.reason, "exit_status": p.exit_status,
                    "full_table": p.full_table, "full_error": p.full_error,
                    "measurement": p.measurement.document if p.measurement else None}
                   for p in b.probes],
        "search": {"jobs": b.jobs, "probes": len(b.probes), "rounds": len(r.rounds),
                   "n_res": b.search_n_res if not req.command else None,
                   "note": b.search_note,
                   "limit": dict(zip(("probes", "rounds"), b.limit)),
                   "by_round": [[str(b.candidates[i].version) for i in round_]
                                for round_ in r.rounds]},
        "skipped": skipped,
        "yanked": yanked_entries(b.yanked, b.candidates,
                                 {str(p.release.version) for p in b.probes}),
        "params": {**{k: v for k, v in vars(req.options).items()},
                   "n_outer": list(req.options.n_outer),
                   "variants": list(req.options.variants),
                   "target": _target_shown(req.options.target)},
        "target": _target_shown(req.options.target) or None,
        "measured": where_measured(b),
        **({"target_spec": {"file": Path(req.options.target).name, "sha256": spec.sha256,
                            "compute_capability": spec.compute_capability, "text": spec.text}}
           if (spec := spec_file(req)) is not None else {}),
        "measured_part": list(b.measured_part),
        "needs_a_gpu": [{"from": lo, "to": hi, "command": cmd}
                        for (lo, hi), cmd in zip(b.needs_a_gpu, gpu_commands(b))],
        "command": list(req.command) or None,
        "reproduce": reproduce_command(b),
        "reproduce_standalone": {
            "program": None if req.command else standalone.program(req.options,
                                                                   _on_a_gpu(req)),
            "commands": standalone.commands(standalone_releases(b), req.options,
                                            gpu=_on_a_gpu(req), command=req.command)},
        "report": str(report_path) if report_path else None,
    }
    if r.status == "found":
        doc["compare"] = JAX_COMPARE.format(old=b.last_old.release.version,
                                            new=b.first_new.release.version)
    doc.update(extra or {})
    return doc


def report_stem(b: Bisection) -> str:
    """``bisect-A-B-backend``, plus a digest of the result-changing options where any differ
    from the defaults: runs that ask different questions never overwrite each other."""
    req = b.request
    changed = req.result_options()
    # A target names itself in place of the backend: a built-in by its name, a spec file by
    # its stem and content digest (the internal backend key never names a file).
    target = req.options.target
    where = target_label(target) if target else req.backend
    if target:
        changed.pop("target")
    stem = f"bisect-{req.start}-{req.end}-{where}" + ("-command" if req.command else "")
    if not changed:
        return stem
    text = json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in changed.items()},
                      sort_keys=True)
    return f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def has_answer(json_path: Path) -> bool:
    """The report at ``json_path`` holds an answer (a change found, or the ends alike): a
    rerun that finds none (an end unmeasurable, the noise undecided) keeps it."""
    try:
        return json.loads(json_path.read_text(encoding="utf-8"))["status"] in ("found", "alike")
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_report(b: Bisection, folder: Path, evidence_markdown: str = "",
                 extra: dict | None = None, next_step: NextStep | None = None
                 ) -> tuple[Path, dict, bool]:
    """Write the markdown and its JSON; the path, the document, and whether an earlier
    report was kept instead (this run found no answer and that one has one).

    A file whose content would change only in volatile fields (timings, the date) is left
    as it was, so that a rerun that measures nothing changes no tracked file."""
    md_path = folder / f"{report_stem(b)}.md"
    doc = document(b, md_path, extra)
    if b.result.status == "unmeasurable" and has_answer(md_path.with_suffix(".json")):
        return md_path, doc, True
    text = render(b, evidence_markdown, next_step)
    write_text_if_changed(md_path, text)
    write_json_if_changed(md_path.with_suffix(".json"), doc)
    chart = md_path.with_suffix(".png")
    if chart.exists() and f"]({chart.name})" not in text:
        chart.unlink()  # an earlier run's chart that this report no longer shows
    return md_path, doc, False


# -- python -m bisect --explain RELEASE ---------------------------------------------------


def explain_command(release: str, backend: str, options: HarnessOptions) -> str:
    """The command that explains ``release`` again, with every option that shaped it."""
    argv = ["python", "-m", "bisect", "--explain", release,
            *(["--target", options.target] if options.target else ["--backend", backend])]
    if options.n_inner != HarnessOptions().n_inner:
        argv += ["--n-inner", str(options.n_inner)]
    if options.dtype != HarnessOptions().dtype:
        argv += ["--dtype", options.dtype]
    if options.xla_flags:
        argv += [f"--xla-flags={options.xla_flags}"]
    return shlex.join(argv)


def write_explain_report(folder: Path, release: str, backend: str, options: HarnessOptions,
                         explanation: dict, explanation_markdown: str) -> tuple[Path, dict]:
    """The report of one release's explanation and its JSON document: the path and the
    document."""
    where, label = backend, backend
    if options.target:  # XLA's plan for that GPU, compiled here: say so, name it so
        where = target_label(options.target)
        label = f"compiled for {load_target(options.target).description}, without the GPU"
    path = folder / f"explain-{release}-{where}.md"
    doc = {"schema": 1, "explain": release, "backend": backend,
           "target": options.target or None, "measured": label,
           "params": {"n_inner": options.n_inner, "dtype": options.dtype,
                      "xla_flags": options.xla_flags},
           "explanation": explanation, "report": str(path)}
    write_atomic(path, f"# jax.lax.scan memory: why v0 grows under jax {release} ({label})\n\n"
                       f"{explanation_markdown}\n## Reproduce\n\n```sh\n"
                       f"{explain_command(release, backend, options)}\n```\n")
    write_json(path.with_suffix(".json"), doc)
    return path, doc
