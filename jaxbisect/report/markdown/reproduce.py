"""How to see the answer: the one reproduce block of the first screen (the standalone program
at each end, or this toolkit's own command), and the plain pip and python lines below it."""

from __future__ import annotations

import inspect
import re
import shlex
import string
import textwrap
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from jaxbisect.lab import backends
from jaxbisect.report.installs import (
    pip_install,
    python_needed,
    venv_python,
)
from jaxbisect.report.markdown.words import (
    END_WORDS,
    IN_THE_CLONE,
    cut,
    details,
    pair_or_ends,
    pair_words,
    probe_at,
)
from jaxbisect.search.classify import Direction
from jaxbisect.search.error_signature import core
from jaxbisect.search.rounds import Status
from jaxbisect.stages.program import (
    FILE,
    WRITTEN,
    Program,
    case_source,
    series_values,
    write_program,
)
from repro.case import CaseFile
from repro.metrics import concrete
from repro.units import KIB_TEXT, plan_lines, printed_mib

SIZE_NAMES = ("n", "rows", "cols", "size", "batch", "block_size", "num_blocks")
OUTPUT_LINES = 2

MEASURE_SNIPPETS = {
    "memory": "\n".join(f"    {line}" for line in plan_lines("fn.lower(*args).compile()")),
    "compile_time": """    samples = []
    for _ in range(6):
        jax.clear_caches()
        started = time.perf_counter()
        fn.lower(*args).compile()
        samples.append(time.perf_counter() - started)
    print("compile_time (s), median of 5 after one warm-up:", statistics.median(samples[1:]))""",
    "run_time": """    args = concrete(args)
    jax.block_until_ready(fn(*args))  # compile and warm up
    samples = []
    while len(samples) < 5 or sum(samples) < 0.3:
        started = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - started)
    quartile = statistics.quantiles(samples, n=4, method="inclusive")[0]
    print(f"run_time (s), 25th percentile of {len(samples)} calls:", quartile)""",
    "peak_memory": """    args = concrete(args)
    compiled = fn.lower(*args).compile()
    open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS mark (Linux)
    jax.block_until_ready(compiled(*args))
    peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
    print(f"peak RSS after compiling: """
    + printed_mib("int(peak.split()[1])", KIB_TEXT) + '")',
    "output": """    out = jax.block_until_ready(fn(*concrete(args)))
    for leaf in jax.tree_util.tree_leaves(out):
        a = numpy.asarray(leaf)
        print("output:", a.shape, a.dtype, "sum", a.astype(numpy.float64).sum(), a.ravel()[:8])""",
    "error": """    try:
        jax.block_until_ready(fn(*concrete(args)))
        print("error: no error")
    except Exception as exc:
        print("error:", type(exc).__name__, str(exc).splitlines()[0])""",
}



def changed_pairs(doc: dict) -> list[tuple[str, str, str]]:
    """Where the behaviour differs, as the answer says: the pair found (``came``, or ``fix``),
    or where each change inside alike ends came and where it went: (old, new, kind)."""
    if doc.get("status") == Status.FOUND and doc.get("last_old") and doc.get("first_new"):
        kind = "fix" if doc.get("direction") == Direction.FIX else "came"
        return [(doc["last_old"]["jax"], doc["first_new"]["jax"], kind)]
    if doc.get("status") == Status.ALIKE:
        return [(*c[kind], kind) for c in (doc.get("interior_check") or {}).get("changes") or ()
                for kind in ("came", "went")]
    return []


def jaxlib_of(doc: dict, jax: str) -> str | None:
    """The jaxlib a release ran on: its probe's, or a commits part's (a release inside)."""
    probe = next((p for p in doc["probes"] if p["jax"] == jax), None)
    if probe:
        return probe["jaxlib"]
    for _, c in ([(None, doc["commits"])] if doc.get("commits") else
                 [(None, c) for c in doc.get("commits_by_pair") or ()]):
        for side in ("old", "new"):
            if c.get(side) == jax and c.get(f"{side}_jaxlib"):
                return c[f"{side}_jaxlib"]
    return None


def written_program(doc: dict) -> Program | None:
    """The plain program of a document written before the stage that runs it: the case cut
    down (program.py), at the sizes the pair's figures were measured at."""
    case, metric = doc.get("case"), doc["metric"]["name"]
    if not case or not case.get("source") or metric not in WRITTEN or not changed_pairs(doc):
        return None
    pair = changed_pairs(doc)[0]
    series = next((p.get("series") for p in doc["probes"] if p["jax"] == pair[0]), None) or {}
    params = {**case["params"], **(series.get("params") or {})}
    over = ()
    if doc.get("over"):
        name = doc["over"]["name"]
        values = [v for v in doc["over"]["values"]
                  if str(v) in (series.get("figures") or {})] or doc["over"]["values"]
        over = (name, series_values(tuple(values)))
        params.pop(name, None)
    cased = CaseFile(path=case["path"], source=case["source"], sha256=case.get("sha256", ""),
                     defaults=dict(case.get("defaults") or {}), devices=case.get("devices"))
    program = write_program(cased, metric, params, over, xla_flags=doc.get("xla_flags") or "",
                            target=doc.get("target") or "")
    recorded = (doc.get("reproducer") or {}).get("program")
    # written by the pipeline and not run (a GPU it had no device of): the record's text
    return replace(program, text=recorded) if recorded else program


def shown_program(doc: dict) -> dict | None:
    """The program a report shows and each install where the behaviour differs, with what
    it printed there: ``{file, text, lines, ends, shows_change, nondeterministic, measured}``
    (``measured``: the program itself ran; else it was never run and shows no output);
    None where the report has none."""
    r = doc.get("reproducer") or {}
    if r.get("ends") and r.get("program"):
        ends = [*r["ends"], *((r.get("went") or {}).get("ends") or ())]
        flaky = r.get("nondeterministic") or (r.get("went") or {}).get("nondeterministic")
        shows = [r.get("shows_change"), (r.get("went") or {}).get("shows_change", True)]
        ends = [{**e, "install": pip_install(doc, e["jax"], e.get("jaxlib"))} for e in ends]
        return {"file": r["file"], "text": r["program"], "lines": r["lines"],
                "ends": unique_ends(ends), "nondeterministic": bool(flaky),
                "shows_change": None if None in shows else all(shows), "measured": True}
    program = written_program(doc)
    if program is None:
        return None
    ends = []
    for old, new, kind in changed_pairs(doc):
        roles = (("like the ends", "unlike the ends") if kind == "came" and
                 doc["status"] == Status.ALIKE else ("unlike the ends", "like the ends")
                 if kind == "went" else PAIR_ROLES.get(doc.get("direction"), PAIR_ROLES[None]))
        for jax, role in zip((old, new), roles):
            jaxlib = jaxlib_of(doc, jax)
            ends.append({"jax": jax, "jaxlib": jaxlib, "role": role,
                         "install": pip_install(doc, jax, jaxlib), "command": program.command,
                         "output": None, "exit": None})  # never run: no output
    return {"file": FILE, "text": program.text, "lines": program.lines,
            "ends": unique_ends(ends), "nondeterministic": False, "shows_change": None,
            "measured": False}


PAIR_ROLES = {Direction.REGRESSION: ("last good", "first bad"),
              Direction.FIX: ("last bad", "fixed"), None: ("last old", "first new")}


def unique_ends(ends: list[dict]) -> list[dict]:
    """Each release once, in release order (a came-and-went's middle release is both the
    first unlike the ends and the last before it went)."""
    seen: dict[str, dict] = {}
    for end in ends:
        seen.setdefault(end["jax"], end)
    return sorted(seen.values(), key=lambda e: Version(e["jax"]))


def first_difference(outputs: list[str]) -> int | None:
    """The first line (an output's leaf, a figure) at which two outputs differ, or None."""
    if len(outputs) != 2 or None in outputs:
        return None
    a, b = (o.strip().splitlines() for o in outputs)
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def leaf_of(output: str, at: int) -> str:
    """The line ``at`` of an output, with where it stands ("line 2 of 3") where it has more."""
    lines = output.strip().splitlines()
    if at >= len(lines):
        return f"(no line {at + 1}: {len(lines)} in all)"
    return lines[at] + (f"   (line {at + 1} of {len(lines)})" if len(lines) > 1 else "")


def printed(end: dict, at: int | None = None, error: bool = False) -> str:
    """What an end printed, on one line: both runs where they differ; ``at``: only the line
    where the ends first differ (an output's first differing leaf), never a shared prefix;
    ``error``: an error as its core (its own words and figures, what it quotes of the
    program said as "[the instruction it quotes]"), never cut inside the instruction it quotes."""
    runs = end.get("outputs") or [end.get("output")]
    if error:
        runs = [core(o.strip()) if o and o.strip() != "no error" else o for o in runs]
    if at is not None and len(runs) == 1 and len((runs[0] or "").splitlines()) > 1:
        return leaf_of(runs[0] or "", at)
    said = [" | ".join(line.strip() for line in (o or "").splitlines() if line.strip())
            for o in runs]
    if not any(said):
        return "(no output)"
    # An error's core ends with its own figures (a size, a limit): said whole, as the headline.
    longest = 400 if error else 160
    if len(said) > 1:
        return cut("; ".join(f"run {k}: {o}" for k, o in enumerate(said, 1)), longest)
    return cut(said[0], longest)


def end_lines(end: dict, venv: str, measured: bool, unrun: str = "not run for this report",
              at: int | None = None, error: bool = False) -> list[str]:
    """One install of the reproduce block: its label first (never scrolled out of view),
    the line that makes its venv (``venv``: the interpreter and the folder) and installs into
    it, the run in it and what it printed in a recorded run; a program never run says so
    (``unrun``: why) and shows no figure under its name."""
    label = f"# jax {end['jax']}" + (f" (jaxlib {end['jaxlib']})" if end.get("jaxlib") and
                                     end["jaxlib"] != end["jax"] else "")
    shown = printed(end, at, error) if measured else ""
    # an error's core names what it leaves out in brackets ("[the instruction it quotes]"):
    # said as such where it is not the message as printed
    short = error and measured and "[" in shown and shown not in (end.get("output") or "")
    said = f"prints{' (in short)' if short else ''}: {shown}" if measured else unrun
    role = END_WORDS.get(end["role"], end["role"])
    python, folder = venv.split()
    return [f"{label}, {role}", f"{python} -m venv {folder} && {folder}/bin/{end['install']}",
            f"{in_venv(end['command'], folder)}   # {said}"]


def in_venv(command: str, folder: str) -> str:
    """``command`` (``[XLA_FLAGS=… ]python repro.py``) run by the venv's own interpreter."""
    flags, _, rest = command.rpartition("python ")
    return f"{flags}{folder}/bin/python {rest}"


def venv_of(doc: dict, jax: str) -> str | None:
    """The reproduce block's venv folder of release ``jax`` (``b``), or None where the block
    does not install it."""
    shown = shown_program(doc)
    at = [e["jax"] for e in (shown or {}).get("ends") or ()]
    return venv_folder(at.index(jax)) if jax in at else None


def venv_folder(i: int) -> str:
    """The ``i``-th venv folder of a reproduce block (one a release): ``a``, ``b``, …"""
    return string.ascii_lowercase[i] if i < len(string.ascii_lowercase) else f"v{i}"


def reproduce_block(doc: dict) -> list[str]:
    """The first screen's copy-paste block: the standalone program at each install where the
    behaviour differs, with what it printed there; else this toolkit's command."""
    shown = shown_program(doc)
    if shown:
        ends = shown["ends"]
        if doc.get("status") == Status.FOUND and len(ends) == 2:  # the answer's own words
            ends = [{**end, "role": role} for end, role in zip(ends, pair_words(doc))]
        gpu = bool(doc.get("target")) and str(doc.get("backend", "")).startswith("cuda")
        unrun = "not run: needs a GPU" if gpu else "not run for this report"
        at = (first_difference([e.get("output") for e in ends[:2]])  # a pytree's leaf
              if shown["measured"] and len(ends) == 2 and doc["metric"]["name"] == "output"
              else None)
        error = doc["metric"]["name"] == "error"
        lines = [line for i, end in enumerate(ends)
                 for line in end_lines(end, f"{venv_python(end['jax'], doc)} {venv_folder(i)}",
                                       shown["measured"], unrun, at, error)]
        notes = []
        if shown["shows_change"] is False:
            notes.append("its output does not show the change: see below")
        flaky = [e["jax"] for e in ends if figure_varies(doc, e["jax"])]
        if flaky:  # the bisection's runs said so, whatever the program's two runs printed
            both = all(len(set(e.get("outputs") or ())) > 1 for e in ends if e["jax"] in flaky)
            notes.append(f"jax {', '.join(flaky)} print{'s' if len(flaky) == 1 else ''} "
                         f"something else each run (the bisection's runs differed): "
                         + ("each of the program's two runs is shown" if both
                            else "one run's output is shown"))
        elif shown["nondeterministic"]:
            notes.append("its output differs between runs of one release")
        if shown["measured"] and measures_a_runs_peak(doc, shown["text"]):
            notes.append("Linux only: it reads /proc. It prints its own runs; a run's peak "
                         "(memory held above what was resident before it) moves a few percent "
                         "from run to run")
        if not shown["measured"]:
            notes.append("not run for this report: the figures above are the bisection's"
                         if not gpu else
                         "needs a GPU, not run here: the figures above are XLA's plan "
                         "without it")
        said = f" ({'; '.join(notes)})" if notes else ""
        sizes = program_sizes(shown["text"])
        origin = "plain JAX"  # written from the case file, run or not (the note says)
        return [f"Reproduce: `{shown['file']}` below ({origin}, {shown['lines']} lines"
                f"{'; ' + sizes if sizes else ''}){said}:",
                "```sh", *lines, "```", "", *mlir_lines(doc, ends),
                *details(f"The same question asked with this toolkit ({IN_THE_CLONE})"
                         f"{saved_first(doc)}", [doc["reproduce"]], "sh")]
    r = doc.get("reproducer") or {}
    why = f" No standalone program: {r['why_not']}." if r.get("why_not") else ""
    return [f"Reproduce with this toolkit ({IN_THE_CLONE}){saved_first(doc)}:{why}", "",
            "```sh", doc["reproduce"], "```", ""]


def measures_a_runs_peak(doc: dict, program: str) -> bool:
    """Whether the program measures a run's peak (the process's RSS mark), a figure that
    moves by a few percent between runs, so its own runs differ from the tables'."""
    return ((doc.get("reproducer") or {}).get("quantity") == "peak"
            or "a run's peak" in (program or ""))


def pins_said(doc: dict) -> str:
    """What the install lines pin, exactly: every package each release's environment's record
    holds; where the line names ``jax[cuda12]`` and the environment compiled without the GPU,
    that the CUDA wheels the extra pulls in were not there, so pip picks them."""
    said = ("Each line pins every package that release's environment held when it was "
            "measured, as the packages table lists them")
    if "[cuda" in pip_install(doc, doc["probes"][0]["jax"]) and doc.get("target"):
        held = sorted({n for p in [*(doc.get("probes") or ()), *(doc.get("interior") or ())]
                       for n in (p.get("installed") or {}) if n.startswith("nvidia-")})
        if held:  # the CUDA wheels the environments held are on the lines, pinned
            said += (f"; `jax[cuda12]` also pulls NVIDIA's CUDA wheels: those the "
                     f"environments held ({', '.join(f'`{n}`' for n in held)}) are pinned; "
                     f"the others it pulls were not in them (compiled without the GPU), so "
                     f"pip picks their versions")
        else:
            said += ("; `jax[cuda12]` also pulls NVIDIA's CUDA wheels, which that environment "
                     "(compiled without the GPU) did not hold: pip picks their versions")
    return said + "."


def figure_varies(doc: dict, jax: str) -> bool:
    """Whether the bisection's own runs of a release printed different outputs."""
    return any(row.get("jax") == jax and (row.get("figure") or {}).get("nondeterministic")
               for row in [*(doc.get("probes") or ()), *(doc.get("interior") or ())])


def program_sizes(text: str) -> str:
    """The sizes a program runs at, read from its own ``case(...)`` call and the values its
    loop runs over (``n_res=32; n_outer 2, 5``): beside its figures, so that a figure at one
    size is never read as another's."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "case"]
    defined = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "case"]
    sizes = {}
    for d in defined[:1]:
        named = d.args.args[len(d.args.args) - len(d.args.defaults):]
        sizes.update({a.arg: v.value for a, v in zip(named, d.args.defaults)
                      if isinstance(v, ast.Constant)})
    sizes.update({k.arg: k.value.value for c in calls[:1] for k in c.keywords
                  if k.arg and isinstance(k.value, ast.Constant)})
    given = [f"{k}={v!r}" for k, v in sizes.items() if isinstance(v, int)
             and not isinstance(v, bool) and (k.startswith("n_") or k in SIZE_NAMES)
             and not any(k == c.arg and isinstance(c.value, ast.Name)
                         for call in calls[:1] for c in call.keywords)]
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)
             and isinstance(n.target, ast.Name) and n.target.id == "value"]
    over = [f"{k.arg} {', '.join(map(str, ast.literal_eval(loops[0].iter)))}"
            for c in calls[:1] for k in c.keywords
            if loops and isinstance(k.value, ast.Name) and k.value.id == "value"]
    return "; ".join(filter(None, [", ".join(given), *over]))


def saved_first(doc: dict) -> str:
    """Where the toolkit's command names a case file the toolkit's clone does not hold: that
    it is the case printed below, to be saved under that name first."""
    case = doc.get("case") or {}
    if case.get("shipped", "/" in case.get("path", "/")):
        return ""
    return f" (save the program below as `{case['path']}` first)"


def standalone_script(doc: dict) -> str | None:
    """The case's source and the lines that measure its metric, runnable with plain
    ``python`` in any environment with jax."""
    case, metric = doc.get("case"), doc["metric"]["name"]
    if not case or metric not in MEASURE_SNIPPETS:
        return None
    params = case["params"]
    measuring = f"    fn, args = case(**{params!r})\n{MEASURE_SNIPPETS[metric]}"
    if doc["over"]:  # the series: the metric at each value of the parameter
        name, values = doc["over"]["name"], doc["over"]["values"]
        # a size on one line with its value, as the first screen's program prints it
        said = ("" if metric == "memory" else f"        print({name!r}, value)\n")
        snippet = ("\n".join(f"    {line}" for line in plan_lines(
            "fn.lower(*args).compile()", f"{name}={{value}}")) if metric == "memory"
                   else MEASURE_SNIPPETS[metric])
        measuring = (f"    for value in {list(values)!r}:\n{said}"
                     f"        fn, args = case(**{{**{params!r}, {name!r}: value}})\n"
                     + textwrap.indent(snippet, "    "))
    cut_case = case_source(case["source"]).rstrip()
    numpy = " and numpy" if re.search(r"\bnumpy\.|\bconcrete\(", measuring) else ""
    return (f"{cut_case}\n\n\n# --- measuring, as `python -m repro --case` does "
            f"(jax{numpy} only) ---\n{measuring_helpers(measuring)}if __name__ == \"__main__\":\n"
            f"    print(\"jax\", jax.__version__, jax.devices()[0].device_kind)\n"
            f"{measuring}\n")


def measuring_helpers(measuring: str) -> str:
    """The imports and the ``concrete`` helper the measuring lines use, and only those (a
    compiled plan's memory needs neither ``statistics`` nor data to run on)."""
    modules = [m for m in ("statistics", "time") if re.search(rf"\b{m}\.", measuring)]
    parts = [f"import {', '.join(modules)}  # noqa: E402\n"] if modules else []
    if re.search(r"\bnumpy\.", measuring):
        parts.append("import numpy  # noqa: E402\n")
    if re.search(r"\bconcrete\(", measuring):
        parts.append(f"\n{inspect.getsource(concrete)}")
    return "\n" + "\n".join(parts) + ("\n\n" if parts else "")


def standalone_lines(doc: dict) -> list[str]:
    """Plain ``pip install`` and ``python`` lines for the ends (or the pair found), and the
    program they run: the standalone one where the document has it, else ``measure.py``
    (the case and the lines that measure its metric)."""
    shown = shown_program(doc)
    if shown:
        case = doc.get("case") or {}
        own = ([] if not saved_first(doc) or not case.get("source") else
               details(f"{case['path']}: the program this toolkit's command takes (save it "
                       f"under that name)", [case["source"].rstrip()], "python"))
        return [*details(f"{shown['file']}: the standalone program ({shown['lines']} lines, "
                         f"jax only)", [shown["text"].rstrip()], "python"), *own]
    releases = pair_or_ends(doc)
    backend = backends.get(doc["backend"])
    on = backend.machine_words(doc)
    flags = f"XLA_FLAGS={shlex.quote(doc['xla_flags'])} " if doc.get("xla_flags") else ""
    python = "3.12" if any(python_needed(v, doc) for v in releases) else "3.11"
    lines = ["```sh"]
    for version in releases:
        jaxlib = probe_at(doc, version)["jaxlib"]
        venv = f"venv-{version}"
        run = (f"{flags}{venv}/bin/python measure.py" if doc.get("case")
               else f". {venv}/bin/activate && {flags}{shlex.join(doc['command'] or ())}")
        lines += [f"{venv_python(version, doc)} -m venv {venv} && "
                  f"{venv}/bin/{pip_install(doc, version, jaxlib)}", run]
    lines += ["```", "", f"({pins_said(doc)})", ""]
    recorded = (doc.get("measure_program") or {}).get("program")
    script = recorded or standalone_script(doc)
    case = doc.get("case")
    fell_back = [v for v in releases if ((probe_at(doc, v).get("series") or {})
                                         .get("fallback"))]
    if script and fell_back and doc["metric"]["name"] == "memory":
        reason = probe_at(doc, fell_back[0])["series"]["fallback"].get("reason") or ""
        lines += [f"Under jax {', '.join(fell_back)} the script prints 0.00 MiB: "
                  f"{reason or 'the compiled statistics are empty there'}; the toolkit "
                  f"measured a run's peak there instead (the table above), which no short "
                  f"script prints.", ""]
    if script:
        lines += [f"`measure.py` is the case `{case['path']}` (its source as the record holds "
                  f"it) cut to what `case()` needs, and the lines that measure its "
                  f"{doc['metric']['name']} as the toolkit's harness (`python -m repro`) does; "
                  + ("written with this report (its record holds it as `measure_program`) "
                     if recorded else "written for this page ")
                  + "and not run for it (the tables' figures are the harness's):",
                  "", "```python", script.rstrip(), "```", ""]
    elif case:
        lines += [f"The case, `{case['path']}`:", "", "```python", case["source"].rstrip(),
                  "```", ""]
    return details(f"Without the toolkit{on}: a fresh virtual environment per release "
                   f"(Python {python}) and the program", lines)


def is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


_MLIR = re.compile(r"The MLIR operation involved:\s*\n\s*(\S.*)")


def mlir_lines(doc: dict, ends: list[dict]) -> list[str]:
    """The operation a Mosaic error names (its message's second part, which the printed line
    leaves out): what a Mosaic maintainer looks for first, for each end that raised one (from
    the program's recorded output, else the release's own measured error)."""
    def said(end: dict) -> str:
        measured = next((p["figure"].get("value") for p in doc.get("probes") or ()
                         if p["jax"] == end["jax"]), "")
        return f"{end.get('output') or ''}\n{measured or ''}"
    named = [(e["jax"], m[1].strip()) for e in ends if (m := _MLIR.search(said(e)))]
    return [*(f"The operation Mosaic names (jax {jax}): `{op}`" for jax, op in named),
            ""] if named else []
