"""Minimal reproducer of the jax.lax.scan memory growth report (see docs/findings.md).

Self-contained: jax and the standard library only, so it runs in any JAX
environment, with or without the rest of the toolkit.
"""

SCHEMA = 1  # version of the JSON document printed by ``python -m repro --json``
