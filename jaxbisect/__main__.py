import sys

try:
    from jaxbisect.cli import main
except KeyboardInterrupt:  # Ctrl-C while it loads: interrupted, as at any later moment
    sys.exit(130)

sys.exit(main())
