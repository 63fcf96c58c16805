"""``python -m kcodec.cli``: the ``kcodec`` command."""

from kcodec.cli import main

main()
