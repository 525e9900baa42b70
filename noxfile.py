"""Sessions: ``nox -s repro`` (the main job), ``nox -s tests``, ``nox -s lint``.

uv is nox's backend here; JAX releases themselves live in environments made by
``jaxbisect.environments`` (one per release and backend, shared with the bisect driver).
"""

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["repro"]


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: real JAX CPU releases installed with uv, property tests, the CLI."""
    session.install("-e", ".[test]")
    session.run("pytest", *(session.posargs or ["-q"]))


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
