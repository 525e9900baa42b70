"""``python -m bisect`` from the repo root: run the release bisection (``jaxbisect.cli``)."""

import sys

try:
    from jaxbisect.cli import main
except KeyboardInterrupt:  # Ctrl-C while it loads: interrupted, as at any later moment
    raise SystemExit(130) from None
except ModuleNotFoundError as error:  # run from an environment without the toolkit
    print(
        f"python -m bisect: cannot load the bisection tool (no module {error.name!r}); "
        "run it from the project environment (see README.md)",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

raise SystemExit(main())
