"""Where and what: after a bisection, the evidence a maintainer asks for next.

One module per kind of evidence, pure logic on what the harness wrote, the renderer apart:

- ``lowering``, ``where``: JAX, XLA's HLO passes or below HLO? the two releases' lowered and
  optimized modules, compared once what always differs is removed (one attribution rule).
- ``passes``, ``flags``: which HLO pass or changed XLA flag default is behind a change (run by
  ``jaxbisect.explain``).
- ``dumps``, ``schedule``, ``release``, ``collect``: XLA's own account of a memory case's
  compiled plan (``python -m repro.dumps``: buffer assignment, memory-usage report, the
  scheduled entry computation), one side and both; ``collect.buffers_at_peak`` is the entry
  point (run by ``jaxbisect.cli``).
- ``commits``, ``handoff``: the JAX commit of each wheel, the XLA commit it pins, and the
  hand-off to JAX-Toolbox's triage below the release.
- ``render``, ``chart``: the markdown and the picture.
"""
