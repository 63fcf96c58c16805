"""kcodec's build-time code generator: specs -> model -> plans -> generated Python.

Nothing under ``src/kcodec`` may import this package; it runs at build/install time
(``hatch_build.py``) or through ``kcodec generate``'s subprocess-free twin
``python -m codegen``.
"""
