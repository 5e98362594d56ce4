"""Development graders, kept out of the ``smtshape`` wheel: the tests and the
benchmarks grade smtshape (and the other shape-inference tools) with them.

``truth``        grading inferred shapes against runtime truth files (``shared/corpus`` format)
``conformance``  ONNX's backend node test suite, built from the installed onnx, in three variants
``adversarial``  graph families that make a naive constraint store superlinear

Importable from the repository's root (``benchmarks/*.py`` put it on ``sys.path``;
``tests/conftest.py`` does the same for the tests)."""
