import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while it loads: interrupted, as at any later moment
    sys.exit(130)

sys.exit(main())
