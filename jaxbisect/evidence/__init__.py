"""Where and what: after a bisection, the evidence a maintainer asks for next.

One module per kind of evidence, pure logic on what the harness wrote, the I/O in
``collect`` and ``jaxbisect.evidence.explain``, the renderer apart:

- ``lowering``, ``where``: JAX, XLA's HLO passes or below HLO (one attribution rule on
  normalized modules); ``passes``, ``flags``: which HLO pass or XLA flag default is behind it.
- ``release``, ``schedule``, ``collect``: XLA's own account of a memory case's compiled plan
  (``python -m repro.dumps``), one side and both; ``collect.buffers_at_peak`` is the entry.
- ``commits``, ``handoff``: the commits behind each wheel, the hand-off below the release.
- ``render``, ``chart``: the markdown and the picture.
"""
