"""Where and what: after a bisection, the evidence a maintainer asks for next.

One module per kind of evidence, the renderer apart from the collectors:

- ``lowering``: JAX or XLA? the lowered v0 modules of the two releases, compared once what
  always differs is removed.
- ``dumps``, ``schedule``: XLA's own account of the compiled v0 (memory-usage report, buffer
  assignment, the scheduled entry computation), reduced to how many stacked
  ``[n_inner, *shape]`` buffers are live and where the schedule creates them.
- ``commits``: the JAX commit of each wheel and the XLA commit it pins.
- ``release``: one release's side of ``python -m repro.dumps``'s dumps (run, like every
  harness module, by ``jaxbisect.harness``: the driver never imports jax); ``collect``: both
  sides together.
- ``flags``: which changed XLA flag default is behind a change (a pure search, run by
  ``jaxbisect.explain``).
- ``render``, ``chart``: the markdown and the picture.

``collect.buffers_at_peak`` is the entry point of a memory case's buffers (run by
``jaxbisect.metric_cli.explain``).
"""
