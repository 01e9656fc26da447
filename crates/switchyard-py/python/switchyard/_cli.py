"""The ``switchyard`` command installed by the wheel: the Rust CLI's own ``main``."""

import sys

from ._switchyard import cli_main


def main() -> None:
    """Runs the command line on ``sys.argv`` and exits with its code."""
    argv = ["switchyard"] + sys.argv[1:]
    sys.exit(cli_main(argv))


if __name__ == "__main__":
    main()
