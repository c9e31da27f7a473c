import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads the command line: no traceback (main says it after)
    print("voicesnap: stopped.", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
