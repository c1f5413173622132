"""`python -m lantern` runs the `lantern` command."""

from lantern.cli import main

main()
