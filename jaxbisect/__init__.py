"""The driver side of the toolkit: releases, environments, the search, reports.

It never imports jax: every JAX environment is reached through a subprocess that
runs ``python -m repro --json`` and answers with a versioned JSON document.
"""
