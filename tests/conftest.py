"""The development graders (``graders/`` at the repository's root, not in the wheel)
are importable from every test, whichever way pytest was started."""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)      # appended: an installed smtshape is not shadowed
