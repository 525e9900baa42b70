"""A report's figures without the toolkit: the report's program with its measuring lines, and
the plain ``pip install`` / ``python`` lines that run it under each release a report names.

The driver never imports jax: the program is text (``repro/variants.py`` read as a file, plus
the measuring lines written here), run by a maintainer in an environment of their own.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .harness import HarnessOptions

PROGRAM_NAME = "scan_memory.py"
VARIANTS = Path(__file__).resolve().parent.parent / "repro" / "variants.py"

MEASURE = '''

# -- the measuring lines: XLA's plan for each case, as the upstream report measured it --------
# (output + temp of compiled.memory_analysis(), in MB; no device memory is used. jaxlib before
# 0.4.29 reports 0 bytes on the CPU: not measured, never constant.)
N_INNER, N_RES, DTYPE = {n_inner}, {n_res}, jnp.{dtype}
x = jax.ShapeDtypeStruct((N_RES, N_RES, N_RES), DTYPE)
print(f"jax {{jax.__version__}}, {{jax.devices()[0].device_kind}}")
for variant, n_outers in {cases}:
    for n_outer in n_outers:
        stats = outer_loop.lower(x, n_outer, N_INNER, variant).compile().memory_analysis()
        mb = (stats.output_size_in_bytes + stats.temp_size_in_bytes) / 1024**2
        print(f"v{{variant}} n_outer={{n_outer}}: {{mb:.2f}} MB")
'''


def program(options: HarnessOptions, gpu: bool = False) -> str:
    """The report's three variants (verbatim) and the lines that print what the report's table
    shows, at the report's sizes. ``gpu``: v2 at n_outer 1 only, as a target's table has it
    (it unrolls n_inner × n_outer ops: minutes a case to compile for a GPU)."""
    cases = []
    for variant in options.variants:
        n_outers = options.n_outer
        up_to = options.v2_up_to if options.v2_up_to is not None else (1 if gpu else None)
        if variant == 2 and up_to is not None:
            n_outers = tuple(n for n in n_outers if n <= up_to) or n_outers[:1]
        cases.append((variant, tuple(n_outers)))
    return (VARIANTS.read_text(encoding="utf-8").rstrip("\n")
            + MEASURE.format(n_inner=options.n_inner, n_res=options.n_res,
                             dtype=options.dtype, cases=repr(tuple(cases))))


def pip_spec(jax: str, jaxlib: str, gpu: bool) -> list[str]:
    """What ``pip install`` takes for one release: jax and its jaxlib, or on an NVIDIA GPU
    jax with its CUDA 12 wheels (the ``cuda12`` extra, from jax 0.4.30 on)."""
    if gpu:
        return [f"jax[cuda12]=={jax}"]
    return [f"jax=={jax}", f"jaxlib=={jaxlib}"]


def commands(releases: list[tuple[str, str]], options: HarnessOptions, *, gpu: bool = False,
             command: tuple[str, ...] = ()) -> list[str]:
    """One line per release: a fresh virtual environment, the release, and the program (or
    the user's command) run in it, with the report's XLA_FLAGS."""
    env = f"XLA_FLAGS={shlex.quote(options.xla_flags)} " if options.xla_flags else ""
    lines = []
    for jax, jaxlib in releases:
        venv = f"jax-{jax}"
        run = (f"PATH=$PWD/{venv}/bin:$PATH {shlex.join(command)}" if command
               else f"{venv}/bin/python {PROGRAM_NAME}")
        lines.append(f"python -m venv {venv} && {venv}/bin/pip install "
                     f"{shlex.join(pip_spec(jax, jaxlib, gpu))} && {env}{run}")
    return lines


def markdown(releases: list[tuple[str, str]], options: HarnessOptions, *, gpu: bool = False,
             gpu_name: str = "", command: tuple[str, ...] = ()) -> list[str]:
    """The "without the toolkit" part of a report's Reproduce section, as markdown lines."""
    where = (f" on a machine with the GPU ({gpu_name})" if gpu and gpu_name
             else " on a machine with an NVIDIA GPU" if gpu else "")
    if command:
        intro = f"Without the toolkit{where}, in a fresh environment for each release:"
        return [intro, "", "```sh", *commands(releases, options, gpu=gpu, command=command),
                "```", ""]
    intro = (f"Without the toolkit{where}: save the program below as `{PROGRAM_NAME}`, then "
             "run it under each release, each in a fresh environment:")
    return [intro, "", "```sh", *commands(releases, options, gpu=gpu), "```", "",
            f"<details><summary><code>{PROGRAM_NAME}</code>: the report's program and the "
            "measuring lines</summary>", "", "```python", program(options, gpu).rstrip("\n"),
            "```", "", "</details>", ""]
