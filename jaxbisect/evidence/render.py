"""The evidence as markdown for the report: the collectors' results, rendered apart from them."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from .chart import chart_markdown
from .commits import JAX_REPO_URL, XLA_REPO_URL
from .common import MB, UNITS, pass_names
from .handoff import render_xla_range


def _mb(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / MB:.2f} MB"


def _bytes(nbytes: int | None) -> str:
    if nbytes is None:
        return "n/a"
    for unit in ("GiB", "MiB", "KiB"):
        if nbytes >= UNITS[unit]:
            return f"{nbytes / UNITS[unit]:.2f} {unit}"
    return f"{nbytes} B"


def _commit_cell(commit: dict) -> str:
    if commit.get("commit"):
        return f"[`{commit['commit'][:10]}`]({JAX_REPO_URL}/commit/{commit['commit']})"
    return f"`{commit['ref']}` ({commit['source']})" if commit.get("ref") else "unknown"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _code(lines: Sequence[str], language: str = "text") -> str:
    return f"```{language}\n" + "\n".join(lines) + "\n```"


def render_evidence_markdown(attribution: dict, evidence: dict,
                             series: dict[str, list[tuple[int, float]]] | None = None) -> str:
    """The evidence as markdown; ``series`` (label -> [(n_outer, MB)], e.g. every release
    probed) is drawn as its chart."""
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    options = evidence["options"]
    o, n = f"jax {old['jax'] or '?'}", f"jax {new['jax'] or '?'}"
    out = [f"### Where and what: {o} → {n}", ""]
    verdicts = {
        "identical": "the lowered v0 modules are **identical** once source locations, names "
                     "and version-only attributes are removed: the change is in the **XLA "
                     "compiler inside jaxlib**.",
        "changed": "the lowered v0 modules **differ** beyond names and locations: JAX's "
                   "**lowering changed** (the diff is below; XLA may have changed too).",
        "unknown": f"unknown ({attribution.get('reason') or 'no lowered modules'}).",
    }
    optimized = {
        "differs": " XLA's optimized HLO **differs** (normalised: metadata, source locations "
                   "and names set aside): the change is in **XLA's HLO passes**.",
        "identical": " XLA's optimized HLO is **identical** too (metadata, source locations "
                     "and names set aside): the change is **below HLO** (XLA's code "
                     "generation or its runtime).",
    }.get(attribution.get("optimized_hlo") or "", "")
    out += [(f"**Where:** {verdicts[attribution['lowering']]}{optimized} "
             f"Culprit: `{attribution['culprit']}`."), ""]
    commits, links = attribution["commits"], attribution["links"]
    shape = "[" + ",".join(map(str, [options["n_inner"]] + [options["n_res"]] * 3)) + "]"
    rows = [
        ["jaxlib", old["jaxlib"] or "n/a", new["jaxlib"] or "n/a"],
        ["JAX commit of the wheel", _commit_cell(commits["old"]), _commit_cell(commits["new"])],
        ["XLA pin", *(f"[third_party/xla]({links[f'xla_pin_{s}']})" if links[f"xla_pin_{s}"]
                      else "n/a" for s in ("old", "new"))],
        [f"v0 plan at n_outer {options['n_outer']} (output + temp)",
         _mb(old["plan_bytes"]), _mb(new["plan_bytes"])],
        ["XLA's total bytes used", _bytes(old["dump_total_bytes"]),
         _bytes(new["dump_total_bytes"])],
        ["largest allocation", *(f"{_bytes(r['largest_allocation']['size_bytes'])}, "
                                 f"{r['largest_allocation']['kind']}"
                                 if r["largest_allocation"] else "n/a" for r in (old, new))],
        [f"stacked {shape} buffers (slots)", *(
            f"{r['stacked']['slots']} ({_bytes(r['stacked']['bytes'])}, "
            f"{r['stacked']['values']} values)" if r["stacked"] else "n/a" for r in (old, new))],
    ]
    out += [tabulate(rows, headers=["", o, n], tablefmt="github", disable_numparse=True), ""]
    link_line = []
    if links["jax_compare"]:
        link_line.append(f"JAX changes: [{o}…{n}]({links['jax_compare']})")
    if links["xla_compare"]:
        count = attribution.get("xla_commit_count")
        link_line.append(f"XLA changes: [compare]({links['xla_compare']})"
                         + (f" ({count} commits)" if count is not None else ""))
    elif attribution.get("xla_note"):
        link_line.append(attribution["xla_note"])
    if link_line:
        out += [" · ".join(link_line) + ".", ""]
    out += render_xla_range(attribution)
    for side, release in (("old", old), ("new", new)):
        if release["error"]:
            out += [f"_{side} release: {release['error']}_", ""]
    if attribution.get("optimized_hlo") == "differs" and attribution.get("first_difference"):
        out += [_details("XLA's optimized HLO, normalised: the first real difference",
                         _code(attribution["first_difference"], "diff")), ""]
    if attribution["lowering"] == "changed" and attribution["diff"]:
        more = " (trimmed)" if attribution["diff_truncated"] else ""
        out += [_details(f"Lowering diff, normalised: +{attribution['added']} "
                         f"−{attribution['removed']} lines{more}",
                         _code(attribution["diff"], "diff")), ""]
    if old["schedule"] or new["schedule"]:
        out += [(f"**What:** the scheduled entry computation (XLA's *after_optimizations* "
                 f"HLO) at n_outer {options['n_outer']}: where stacked {shape} buffers are made "
                 f"relative to the while loops."), ""]
        body = []
        for label, release in ((o, old), (n, new)):
            body += [f"{label}:", *release["schedule"], ""]
        out += [_code(body[:-1]), ""]
    raw = []
    for label, release in ((o, old), (n, new)):
        # In the dump's own order, however the dict was stored (sorted keys, from the cache).
        for key in ("memory_usage_report", "buffer_assignment", "after_optimizations"):
            lines = release["raw"].get(key)
            if lines:
                raw += [f"**{label}, {key.replace('_', ' ')}**", "", _code(lines), ""]
    if raw:
        out += [_details("Raw lines from XLA's dumps", "\n".join(raw).rstrip()), ""]
    under = evidence.get("workarounds_under", "new")  # where v0 grows
    helped, label = (old, o) if under == "old" else (new, n)
    if helped["workarounds"]:
        ns = options["workaround_n_outer"]
        rows = []
        for w in helped["workarounds"]:
            points = {p[0]: p[1] for p in w["points"]}
            rows.append([w["name"], *(_mb(points.get(k)).replace(" MB", "") for k in ns),
                         w["verdict"] + (" ✅" if w["verdict"] == "constant" else "")])
        out += [(f"**What helps under {label}** (memory_analysis output + temp, MB; "
                 f"n_inner {options['n_inner']}, n_res {options['n_res']}):"), "",
                tabulate(rows, headers=["way around", *(f"n_outer={k}" for k in ns), "memory"],
                         tablefmt="github", disable_numparse=True), ""]
        restoring = evidence.get("restores_constant") or []
        out += [("Restore constant memory: " + ", ".join(f"`{r}`" for r in restoring) + "."
                 if restoring else "None of these restores constant memory."), ""]
    if series:
        out += ["**The picture:**", "", chart_markdown(series), ""]
    return "\n".join(out).rstrip() + "\n"


def render_explanation_markdown(explanation: dict) -> str:
    """The explanation: the culprit in one sentence first, then how it was found."""
    culprit = explanation["culprit"] or {"text": "No explanation."}
    releases = " → ".join(f"jax {r}" for r in explanation["releases"])
    out = [f"### Why: {releases}", "", f"**{culprit['text']}**", ""]
    changed = explanation.get("flag_defaults_changed") or []
    if changed:
        rows = [[f"`--{c['name']}`", f"`{c['old']}`", f"`{c['new']}`"] for c in changed]
        out += [_details(f"XLA flag defaults that changed and can matter here ({len(changed)})",
                         tabulate(rows, headers=["flag", *(f"jax {r}" for r in
                                                           explanation["releases"][:2])],
                                  tablefmt="github", disable_numparse=True)), ""]
    if explanation.get("tests"):
        rows = [[f"jax {t['release']}", f"`{t['xla_flags']}`" if t["xla_flags"] else "(none)",
                 t["verdict"]] for t in explanation["tests"]]
        out += [_details(f"Measurements behind it ({len(rows)}; v0, compiled, small size)",
                         tabulate(rows, headers=["release", "XLA_FLAGS", "v0"],
                                  tablefmt="github", disable_numparse=True)), ""]
    first = explanation.get("first_difference")
    if first and first.get("diff"):
        more = " (cut short)" if first.get("diff_truncated") else ""
        after = f"after `{first['pass']}`"
        if first.get("old_passes") or first.get("new_passes"):
            after = "; ".join(f"jax {version} after {pass_names(passes)}"
                              for version, passes in ((first["old"], first["old_passes"]),
                                                      (first["new"], first["new_passes"]))
                              if passes)
        out += [_details(f"Where the modules of jax {first['old']} and {first['new']} first "
                         f"differ ({after}; numbering removed){more}",
                         _code(first["diff"], "diff")), ""]
    workarounds = explanation.get("workarounds") or []
    for safe, title in ((True, "Ways around it found by this search:"),
                        (False, "Diagnostic only (correctness depends on these passes; never "
                                "a fix):")):
        lines = [f"- jax {w['release']} with `XLA_FLAGS=\"{w['xla_flags']}\"`: v0 {w['verdict']}"
                 for w in workarounds if w["safe"] is safe]
        if lines:
            out += [title, "", *lines, ""]
    return "\n".join(out).rstrip() + "\n"


def render_culprit_commits(info: dict) -> str:
    """The XLA commits between the two pins that touch the culprit (``--xla-repo``)."""
    if not info["commits"]:
        return f"_XLA commits touching the culprit: none listed ({info['note']})._\n\n"
    likely = info["most_likely"]
    rows = [[f"[`{c['sha'][:10]}`]({XLA_REPO_URL}/commit/{c['sha']})", c["subject"],
             "yes" if c["sets_new_value"] else ""] for c in info["commits"]]
    return (f"**XLA commits between the pins that touch `{info['name']}`** ({len(rows)}); "
            f"most likely [`{likely['sha'][:10]}`]({XLA_REPO_URL}/commit/{likely['sha']}): "
            f"{likely['subject']}\n\n"
            + _details("All of them", tabulate(rows, headers=["commit", "subject",
                                                                "sets the new value"],
                                               tablefmt="github", disable_numparse=True))
            + "\n\n")


def render_buffers_markdown(evidence: dict, command: str, plain: Sequence[str] = ()) -> str:
    """A case's buffers at the peak (evidence/collect.py's ``peak_evidence``) as markdown;
    ``command`` remakes one release's dump, ``plain`` both without the toolkit."""
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    o, n = f"jax {old['jax'] or '?'}", f"jax {new['jax'] or '?'}"
    # By name: a stored document's keys come back sorted.
    params = ", ".join(f"{k}={v!r}" for k, v in sorted((evidence.get("params") or {}).items()))
    followed = evidence.get("followed")
    shape = "[" + ",".join(map(str, followed)) + "]" if followed else None
    named = ("the case's own" if evidence.get("stacked_shape")
             else "the array the new plan holds most more of at its peak")

    def places(reading: dict) -> str:  # arrays: a tuple's place holds only its pointers
        arrays = [e for e in reading["at_peak"] if not e["shape"].startswith("(")]
        return "; ".join(f"{e['places']} × {e['shape']} ({_bytes(e['bytes'])})"
                         for e in arrays[:3]) or "n/a"

    rows = [["jaxlib", old["jaxlib"] or "n/a", new["jaxlib"] or "n/a"],
            ["plan (output + temp)", _mb(old["plan_bytes"]), _mb(new["plan_bytes"])],
            ["XLA's total bytes used", _bytes(old["dump_total_bytes"]),
             _bytes(new["dump_total_bytes"])],
            ["largest allocation", *(f"{_bytes(r['largest_allocation']['size_bytes'])}, "
                                     f"{r['largest_allocation']['kind']}"
                                     if r["largest_allocation"] else "n/a" for r in (old, new))],
            ["held in it (places, by shape)", places(old), places(new)]]
    if shape:
        rows.append([f"{shape} buffers (places)", *(
            f"{r['stacked']['slots']} ({_bytes(r['stacked']['bytes'])}, "
            f"{r['stacked']['values']} values)" if r["stacked"] else "n/a" for r in (old, new))])
    out = ["## The buffers at the peak", "",
           f"XLA's plan of the case at {params or 'its defaults'}, from each release's dump "
           f"(its buffer assignment; the largest allocation is sized to the plan's peak, and "
           f"values that are never live together share a place in it):", "",
           tabulate(rows, headers=["", o, n], tablefmt="github", disable_numparse=True), ""]
    grown = evidence.get("new_at_peak") or []
    grown = [e for e in grown if e["bytes_added"] * 100 >= grown[0]["bytes_added"]]  # ≥ 1 %
    if grown:
        out += [f"Held at the peak under {n} in more places than under {o}: "
                + "; ".join(f"`{e['shape']}` {e['old_places']} → {e['new_places']} "
                            f"(+{_bytes(e['bytes_added'])})" for e in grown[:5]) + ".", ""]
    shrunk = evidence.get("old_at_peak") or []
    shrunk = [e for e in shrunk if e["bytes_removed"] * 100 >= shrunk[0]["bytes_removed"]]
    if shrunk:
        out += [f"Held at the peak under {o} in more places than under {n}: "
                + "; ".join(f"`{e['shape']}` {e['old_places']} → {e['new_places']} "
                            f"(−{_bytes(e['bytes_removed'])})" for e in shrunk[:5]) + ".", ""]
    if not grown and not shrunk and old["at_peak"] and new["at_peak"]:
        out += ["Both plans hold the same shapes in as many places at the peak.", ""]
    for side, release in ((o, old), (n, new)):
        if release["error"]:
            out += [f"_{side}: {release['error']}_", ""]
    values = []
    for label, release in ((o, old), (n, new)):
        a = release["largest_allocation"]
        if a:
            values += [f"{label}: allocation {a['index']} ({_bytes(a['size_bytes'])}, "
                       f"{a['kind']})", *(f"  {v['values']:3d} × {v['shape']} "
                                           f"({_bytes(v['size_bytes'])} each)"
                                           for v in a["values"]), ""]
    if values:
        out += [_details("The values of the largest allocation, by shape", _code(values[:-1])),
                ""]
    if old["schedule"] or new["schedule"]:
        out += [f"The scheduled entry computation (XLA's *after_optimizations* HLO): where "
                f"{shape} buffers ({named}) are made relative to the while loops.", ""]
        body = []
        for label, release in ((o, old), (n, new)):
            body += [f"{label}:", *release["schedule"], ""]
        out += [_code(body[:-1]), ""]
    raw = []
    for label, release in ((o, old), (n, new)):
        for key in ("memory_usage_report", "buffer_assignment", "after_optimizations"):
            lines = release["raw"].get(key)
            if lines:
                raw += [f"**{label}, {key.replace('_', ' ')}**", "", _code(lines), ""]
    if raw:
        out += [_details("Raw lines from XLA's dumps", "\n".join(raw).rstrip()), ""]
    out += ["One release's dump, in its environment (the document holds the dump files):", "",
            _code([command], "sh"), ""]
    if plain:
        out += ["Without the toolkit, from the folder of the case file (*The program*), in the "
                "environments of *Reproduce*; XLA writes `*after_optimizations-buffer-"
                "assignment.txt`, `*-memory-usage-report.txt` and `*after_optimizations.txt` "
                "into each `dump-…` folder:", "", _code(plain, "sh"), ""]
    return "\n".join(out)
