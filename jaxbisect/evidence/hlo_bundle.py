"""The ``hlo_module`` part in words: its <details> section in the report (the first screen's
line is markdown/answer.py's) and the bundle's README (docs/hlo.md). Reads the JSON part only."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from types import SimpleNamespace

from packaging.version import Version
from tabulate import tabulate

from jaxbisect.evidence.passes import SETTING_WORDS, is_safe, setting_kind
from jaxbisect.files import write_atomic
from jaxbisect.lab import backends

SCRIPT = "compile_hlo.py"
RUN_HLO_MODULE = "bazel run //xla/tools:run_hlo_module --"
SAID = {True: "yes", False: "no", None: "cannot tell"}
# Where a report has none, what a bundle would have been (the word is the toolkit's).
NO_BUNDLE = ("No HLO bundle (the module XLA was handed, saved with a script that compiles it "
             "under each jaxlib, no jax tracing)")
# The part's own names for the pair's two releases (its figures' ``role``), and the words a
# reader sees for them by default (a regression's); the report passes its own, by the answer's
# direction (a fix: "last bad" / "first fixed", report/markdown/words.py's pair_words).
ROLES = ("last good", "first bad")
# A figure's recorded role names the pair's older or newer release in the answer's words (a
# fix: "last bad" / "first fixed"; reports made before roles followed the direction said
# "last good" / "first bad" for every pair).
SIDES = {**dict.fromkeys(("last good", "last bad", "last old"), 0),
         **dict.fromkeys(("first bad", "first fixed", "fixed", "first new"), 1)}


def side_of(role: str | None) -> int | None:
    """0 for the pair's older release, 1 for its newer one, None for any other figure."""
    return SIDES.get(role or "")


def figure_columns(part: dict) -> list[str]:
    over = part.get("over")
    if over:
        return [f"{over['name']}={v} (MiB)" for v in over["values"]]
    return ["figure (MiB)"]


def shown_mib(value):
    """A module's MiB figure as every MiB figure of a report: two decimals."""
    return f"{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else value


def figure_cells(part: dict, figure) -> list:
    over = part.get("over")
    if over:
        return [shown_mib((figure or {}).get(str(v), "–")) for v in over["values"]]
    return [shown_mib(figure) if figure is not None else "–"]


def role_words(role: str | None, roles: tuple[str, str] = ROLES) -> str:
    """A figure's ``role`` in the words of the answer's direction (``roles``: the older
    release's and the newer one's)."""
    side = side_of(role)
    return roles[side] if side is not None else role or "–"


def figures_table(part: dict, roles: tuple[str, str] = ROLES) -> str:
    rows = [[f.get("jax", "–"), f.get("jaxlib") or "–", role_words(f.get("role"), roles),
             *figure_cells(part, f.get("figure")),
             f.get("label", "–") if not f.get("error") else f"{f.get('label')}: {f['error']}"]
            for f in part.get("figures") or ()]
    return tabulate(rows, ["jax", "jaxlib", "end", *figure_columns(part), "behaviour"],
                    tablefmt="github")


def modules(part: dict) -> list[str]:
    return sorted(f for f in part["files"] if f.endswith(".pb"))


def run_hlo_module_line(part: dict, bundle: str = "$PWD") -> str:
    """The lines that run the module under XLA's ``run_hlo_module``: ``bundle`` (the bundle
    folder, as the shell sees it where the lines are pasted) is kept as ``$BUNDLE`` before the
    ``cd`` into the XLA checkout, since ``bazel run`` runs the tool in its runfiles tree and a
    path relative to either folder does not reach the module."""
    text = next((f for f in reversed(sorted(part["files"])) if f.endswith(".txt")), "module.txt")
    setting = (part.get("culprit") or {}).get("setting") or ""
    platform = "CUDA" if part.get("target") else "cpu"  # CUDA: on a machine with the GPU
    gpu = "   # on a machine with the GPU" if part.get("target") else ""
    # the newer jaxlib's XLA (the compare link's second commit): the setting's effect is
    # measured on it; the dump goes under the bundle, an absolute path as the module's
    newer = str(part.get("xla_compare") or "").rpartition("...")[2]
    checkout = (f"cd path/to/xla && git checkout -q {newer}   # your XLA checkout, at the "
                f"newer end of the XLA range\n" if newer else
                "cd path/to/xla   # your XLA checkout (this report found no XLA pins): at "
                "least as new as the newer release's jaxlib, so that it reads the module and "
                "has the setting's pass\n")
    return (f"BUNDLE={bundle}   # the bundle folder, as an absolute path\n" + checkout
            + f"{RUN_HLO_MODULE} --platform={platform} --reference_platform= --input_format=hlo "
            f"--xla_dump_to=$BUNDLE/xla-dump --xla_dump_hlo_as_text $BUNDLE/{text}"
            + (f" {setting}" if setting else "") + gpu + "\n"
            "# XLA's plan: its memory report, $BUNDLE/xla-dump/*memory-usage-report.txt")


# Words of documents written before they were said plainly, and what they become.
WHY_NOT_SAID = {
    "where the change lies is not known (the lowered modules were not compared and the "
    "commits were not searched): no module is claimed":
        "the change was not placed in XLA, so no module is claimed to reproduce it",
}


def why_not_words(why_not: str) -> str:
    """Why no bundle is attached, in plain words: a bundle reproduces a compiled memory
    plan, so another metric is said as such."""
    m = re.fullmatch(r"the module's figure is the compiled plan's memory; this question's "
                     r"metric is (\w+)", why_not)
    if m:
        return (f"a bundle reproduces a compiled memory plan; this report's figure is the "
                f"program's {m[1]}")
    return WHY_NOT_SAID.get(why_not, why_not)


def fuel_lines(fuel: dict | None) -> list[str]:
    if not fuel:
        return []
    if not fuel.get("tried"):
        return [f"Fuel (`--xla_fuel`): not tried: {fuel['why']}."]
    said = (f"Fuel (`--xla_fuel={fuel['pass']}=N`, under jax {fuel['release']}): "
            f"{fuel['pass']} turned off gives {fuel['pass_off']['label']}"
            f"{_figure_note(fuel['pass_off'])}, fuel 0 gives {fuel['fuel_0']['label']}"
            f"{_figure_note(fuel['fuel_0'])}")
    first = fuel.get("first_rewrite")
    if first:
        return [f"{said}; the first rewrite that changes the figure is number "
                f"{first['fuel']}; XLA's line at fuel {first['fuel'] - 1}:",
                "", "```text", first["out_of_fuel"] or "(none logged)", "```"]
    return [f"{said}: {fuel['why']}."]


def _figure_note(side: dict) -> str:
    if side.get("error"):
        return f" ({side['error']})"
    figure = side.get("figure")
    if isinstance(figure, dict):
        return " (" + ", ".join(f"{k}: {shown_mib(v)} MiB" for k, v in figure.items()) + ")"
    return f" ({shown_mib(figure)} MiB)" if figure is not None else ""


def setting_said(culprit: dict, compiled_only: bool = False) -> str:
    """The setting that undoes the change, said as what it is (the first screen's words;
    ``compiled_only``: the bundle's module compiled for a target without it)."""
    kind = setting_kind(culprit["setting"], is_safe(culprit["pass"]) if culprit.get("pass")
                        else True, compiled_only)
    return (f"{kind.capitalize()} ({SETTING_WORDS[kind]}): `{culprit['setting']}`"
            + (f" (the pass `{culprit['pass']}`)" if culprit.get("pass") else ""))


def sizes_words(part: dict) -> str:
    """The sizes the module was dumped at: "n_res 32, one module at each n_outer 2, 5"."""
    said = [f"{k} {v}" for k, v in (part.get("params") or {}).items()]
    over = part.get("over")
    if over:
        said.append(f"one module at each {over['name']} "
                    f"{', '.join(map(str, over['values']))}")
    return ", ".join(said) if said else "the case's own sizes"


def details_lines(part: dict, roles: tuple[str, str] = ROLES) -> list[str]:
    """The report's <details> section on the module; without a bundle, one line saying why
    (the short answer leaves it out). ``roles``: the pair's words (the answer's direction)."""
    if not part.get("bundle"):
        return ([f"{NO_BUNDLE}: {why_not_words(part['why_not'])}.", ""]
                if part.get("why_not") else [])
    culprit = part.get("culprit") or {}
    body = [f"The module XLA was handed, dumped before its optimisations under the {roles[0]} "
            f"release at {sizes_words(part)}, compiled by `{SCRIPT}` (no jax tracing) under "
            f"each jaxlib, one process a module, judged as the bisection judges a release:", "",
            figures_table(part, roles), "",
            f"Files in `{part['bundle']}/`: " + ", ".join(f"`{f}`" for f in part["files"])
            + ".", ""]
    if culprit.get("setting"):
        said = setting_said(culprit, bool(part.get("target")))
        body += [f"{said}; in XLA (a Bazel target of XLA's, not run here), "
                 f"from the report's folder, with an XLA checkout:",
                 "", "```sh",
            run_hlo_module_line(part, f"$PWD/{part['bundle']}"), "```", ""]
    if part.get("xla_compare"):
        body += [f"XLA compare: {part['xla_compare']}", ""]
    body += fuel_lines(part.get("fuel"))
    summary = (f"The HLO module alone (compiled by jaxlib, no jax tracing): reproduces: "
               f"{SAID[part.get('reproduces')]}; bundle {part['bundle']}/")
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def readme_text(part: dict, files: list[str], label: str, installs: dict,
                roles: tuple[str, str] = ROLES, pythons: dict[str, str] | None = None) -> str:
    """The bundle's README: what it holds, how to run it, what was measured (``installs`` by
    the part's own role names; ``roles``: the words a reader sees for them; ``pythons``: each
    release's interpreter as its record says it ran, else by its Requires-Python)."""
    pbs = " ".join(sorted(f for f in files if f.endswith(".pb")))
    if part.get("target"):  # compiled for a compile-only GPU: no GPU needed
        pbs += f" --target {part['target']}"
    ends = {ROLES[side_of(f["role"])]: f for f in part["figures"]
            if side_of(f["role"]) is not None}  # by the part's own role names
    pair = [ends[r]["jax"] for r in ROLES if r in ends]
    change = (f"the change between jax {pair[0]} ({roles[0]}) and {pair[1]} ({roles[1]})"
              if len(pair) == 2 else "the change")
    lines = [f"# {label}: the HLO module of {change}, without jax tracing", "",
             f"The module alone reproduces {change}"
             + (f" (compiled without a GPU, for the target `{part['target']}`)"
                if part.get("target") else "")
             + f": **{SAID[part['reproduces']]}** (measured by the toolkit with `{SCRIPT}` "
             f"below under each jaxlib).", "",
             figures_table(part, roles), "",
             *([("At " + ", ".join(f"{k}={v}" for k, v in (part.get("params") or {}).items())
                 if part.get("params") else "At the case's own sizes")
                + (f", over {part['over']['name']} (one module each)" if part.get("over")
                   else "") + ".", ""]),
             "## Files", ""]
    for f in sorted(files):
        if f.endswith(".pb"):
            lines.append(f"- `{f}`: the HloModuleProto jax "
                         f"{ends.get('last good', {}).get('jax', '?')} handed XLA, before its "
                         f"optimisations (source locations left out)")
        elif f.endswith(".txt"):
            lines.append(f"- `{f}`: the same module as text, for reading")
        elif f.endswith(".txtpb"):
            lines.append(f"- `{f}`: the GPU the modules are compiled for without it (a "
                         f"GpuTargetConfigProto; the CUDA plugin wheels of the install lines "
                         f"are needed, no GPU)")
    lines += [f"- `{SCRIPT}`: compiles each .pb with the installed jaxlib (no jax tracing, "
              f"one process a module) and prints the compiled plan's output + temp memory",
              "", "## Run it", "", "```sh"]
    for role, venv in (("last good", "old"), ("first bad", "new")):
        if role in installs and role in ends:
            python = (pythons or {}).get(ends[role]["jax"]) or (
                "python3.12" if Version(ends[role]["jax"]) >= Version("0.11")
                else "python3")  # jax 0.11+ needs Python 3.12 (report/installs.py)
            lines += [f"{python} -m venv {venv} && "
                      f"{venv}/bin/{installs[role]}",
                      f"{venv}/bin/python {SCRIPT} {pbs}   # jax {ends[role]['jax']}: "
                      f"{_said_figure(ends[role]['figure'])}"]
    lines += ["```", ""]
    culprit = part.get("culprit") or {}
    if culprit.get("setting"):
        lines += ["## In XLA", "",
                  f"{setting_said(culprit, bool(part.get('target')))}. With it the {roles[1]} "
                  f"jaxlib "
                  + (f"behaves as the {culprit['under_first_bad']} one (measured):"
                     if culprit.get("under_first_bad") else "was not measured:"), "", "```sh",
                  f"XLA_FLAGS='{culprit['setting']}' new/bin/python {SCRIPT} {pbs}", "```", "",
                  "From this folder, with an XLA checkout (`run_hlo_module` is a Bazel target "
                  "of XLA's; not run by the toolkit"
                  + ("; it runs the module, on a machine with the GPU"
                     if part.get("target") else "")
                  + "; `--reference_platform=` skips the run on XLA's interpreter it would "
                  "compare the results with, slow and not what the plan needs):", "", "```sh",
                  run_hlo_module_line(part), "```", ""]
    if part.get("xla_compare"):
        lines += [f"XLA commits between the two releases' pins: {part['xla_compare']}", ""]
    fuel = fuel_lines(part.get("fuel"))
    if fuel:
        lines += ["## Fuel", "", *fuel, ""]
    return "\n".join(lines)


def rerender_readme(json_path: Path, doc: dict, roles: tuple[str, str] = ROLES,
                    pythons: dict[str, str] | None = None) -> Path | None:
    """``--render``: the bundle README beside a report remade from the report's document (its
    ``hlo_module`` part, the ends' installs as the probes recorded them), where the bundle is
    there; written only where it differs. ``roles``: the pair's words (the answer's
    direction)."""

    part = doc.get("hlo_module") or {}
    readme = json_path.parent / part["bundle"] / "README.md" if part.get("bundle") else None
    if readme is None or not readme.is_file() or not part.get("figures"):
        return None
    installs = {}
    for role, end in (("last good", doc.get("last_old")), ("first bad", doc.get("first_new"))):
        probe = next((p for p in doc.get("probes") or ()
                      if end and (p.get("installed") or {}).get("jax") == end["jax"]), None)
        if probe:
            release = SimpleNamespace(version=end["jax"], jaxlib=end["jaxlib"])
            installs[role] = pip_line(probe["installed"], release)
    files = sorted(part["files"])
    write_atomic_if_changed(readme, readme_text(part, files, doc["label"], installs, roles,
                                                pythons))
    return readme


def _said_figure(figure) -> str:
    if isinstance(figure, dict):
        return " / ".join(f"{shown_mib(v)} MiB" for v in figure.values())
    return f"{shown_mib(figure)} MiB" if figure is not None else "no figure"


def pip_line(run_installed: dict, release) -> str:
    """The install line of an end: jax and jaxlib as the release pins them, and the packages
    its environment held."""
    pins = {"jax": str(release.version), "jaxlib": str(release.jaxlib), **{
        k: v for k, v in (run_installed or {}).items()
        if k in ("numpy", "ml-dtypes", "ml_dtypes", "scipy", "opt-einsum", "opt_einsum",
                 *backends.pip_extras())}}
    return "pip install " + " ".join(shlex.quote(f"{k}=={v}") for k, v in pins.items())


def write_atomic_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        write_atomic(path, text)
