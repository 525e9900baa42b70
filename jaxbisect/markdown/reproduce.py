"""How to see the answer: the one reproduce block of the first screen (the standalone program
at each end, or this toolkit's own command), and the plain pip and python lines below it."""

from __future__ import annotations

import inspect
import shlex
import textwrap

from packaging.version import Version

from repro.metrics import concrete

from .. import backends
from .words import cut, details, pair_or_ends, probe_at

PY312_FROM = Version("0.11")  # jax 0.11 and later need Python 3.12
OUTPUT_LINES = 2

MEASURE_SNIPPETS = {
    "memory": """    stats = fn.lower(*args).compile().memory_analysis()
    print("memory (output + temp bytes):", stats.output_size_in_bytes + stats.temp_size_in_bytes)""",  # noqa: E501
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
    print("peak RSS after compiling:", peak.split(":")[1].strip())""",
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



def reproduce_block(doc: dict) -> list[str]:
    """The first screen's copy-paste block: the standalone program's install, command and
    output at each end where the document has one, else this toolkit's command."""
    r = doc.get("reproducer") or {}
    if r.get("ends"):
        lines = []
        for end in r["ends"]:
            lines.append(f"{end['install']} && {end['command']}   # {end['role']}")
            output = [cut(o, 160) for o in (end.get("output") or "").splitlines() if o.strip()]
            lines += [f"# {o}" for o in output[:OUTPUT_LINES] or ["(no output)"]]
        shows = {True: "", False: " (its output does not show the change: see below)",
                 None: ""}[r.get("shows_change")]
        flaky = " Its output differs between runs of one release (nondeterministic)." \
            if r.get("nondeterministic") else ""
        return [f"Reproduce with `{r['file']}` (plain JAX, {r['lines']} lines, below){shows}:"
                f"{flaky}", "", "```sh", *lines, "```", "",
                *details("The same question asked with this toolkit (its README's Quick start "
                         "installs it)", [doc["reproduce"]], "sh")]
    saved = ("" if (doc.get("case") or {}).get("shipped", "/" in (doc.get("case") or {})
                                                 .get("path", "/"))
             else f" (save the program below as `{doc['case']['path']}` first)")
    why = f" No standalone program: {r['why_not']}." if r.get("why_not") else ""
    return [f"Reproduce with this toolkit (its README's Quick start installs it){saved}:{why}",
            "", "```sh", doc["reproduce"], "```", ""]


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
        measuring = (f"    for value in {list(values)!r}:\n        print({name!r}, value)\n"
                     f"        fn, args = case(**{{**{params!r}, {name!r}: value}})\n"
                     + textwrap.indent(MEASURE_SNIPPETS[metric], "    "))
    return (f"{case['source'].rstrip()}\n\n\n# --- measuring, as `python -m repro --case` does "
            f"(jax and numpy only) ---\nimport statistics, time  # noqa: E402\n\nimport numpy  "
            f"# noqa: E402\n\n\n{inspect.getsource(concrete)}\n\nif __name__ == \"__main__\":\n"
            f"    print(\"jax\", jax.__version__, jax.devices()[0].device_kind)\n"
            f"{measuring}\n")


def standalone_lines(doc: dict) -> list[str]:
    """Plain ``pip install`` and ``python`` lines for the ends (or the pair found), and the
    program they run: the standalone one where the document has it, else ``measure.py``
    (the case and the lines that measure its metric)."""
    r = doc.get("reproducer") or {}
    if r.get("program"):
        return details(f"{r['file']}: the standalone program ({r['lines']} lines, jax only)",
                       [r["program"].rstrip()], "python")
    releases = pair_or_ends(doc)
    backend = backends.get(doc["backend"])
    on = backend.machine_words(doc)
    flags = f"XLA_FLAGS={shlex.quote(doc['xla_flags'])} " if doc.get("xla_flags") else ""
    python = "3.12" if any(Version(v) >= PY312_FROM for v in releases) else "3.11"
    lines = ["```sh"]
    for version in releases:
        jaxlib = probe_at(doc, version)["jaxlib"]
        venv = f"venv-{version}"
        run = (f"{flags}{venv}/bin/python measure.py" if doc.get("case")
               else f". {venv}/bin/activate && {flags}{shlex.join(doc['command'] or ())}")
        wheels = backend.pip_words(version, jaxlib, probe_at(doc, version).get("installed"))
        lines += [f"python3 -m venv {venv} && {venv}/bin/pip install {wheels}", run]
    lines += ["```", "", "(Old releases may need the packages of their day: the toolkit "
              "resolves each environment as of its release's date, e.g. `uv pip install "
              "--exclude-newer DATE`.)", ""]
    script = standalone_script(doc)
    case = doc.get("case")
    if script:
        lines += ["`measure.py` is the case and the lines that measure its "
                  f"{doc['metric']['name']}; saved as `{case['path'].rsplit('/', 1)[-1]}` it "
                  f"is also the case file this toolkit takes (sha256 of the case "
                  f"{case['sha256'][:12]}):", "", "```python", script.rstrip(), "```", ""]
    elif case:
        lines += [f"The case, `{case['path']}`:", "", "```python", case["source"].rstrip(),
                  "```", ""]
    return details(f"Without the toolkit{on}: a fresh virtual environment per release "
                   f"(Python {python}) and the program", lines)
