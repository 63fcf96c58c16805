"""Entry file for ``spark-submit``: the ``kcodec pipeline`` command run as a submitted application.

    spark-submit --master yarn "$(python -c 'import kcodec.cli.submit as m; print(m.__file__)')" \\
        INPUT... --output DIR

The session spark-submit set up (master, executors, Hadoop configuration) is used as it is.
"""

from __future__ import annotations

import sys

from kcodec.cli import main

if __name__ == "__main__":
    main(["pipeline", *sys.argv[1:]])
