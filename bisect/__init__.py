"""The standard library's ``bisect`` API, so that ``python -m bisect`` can be our CLI.

Started from the repo root, this package shadows the standard module, and everything that
imports ``random`` (jax, pytest, nox) then loads it. So it re-exports the same functions from
the C module ``_bisect``, exactly as the standard module does, and imports nothing else: a JAX
environment has none of the toolkit's dependencies. The CLI itself is ``jaxbisect.cli``; code
that tests or probes import must live there, since in most processes ``bisect`` is the
standard module.
"""

from _bisect import bisect_left, bisect_right, insort_left, insort_right

bisect = bisect_right
insort = insort_right

__all__ = ["bisect", "bisect_left", "bisect_right", "insort", "insort_left", "insort_right"]
