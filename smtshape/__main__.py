"""``python -m smtshape``: the same command line as the ``smtshape`` script."""
from .cli import entry

if __name__ == "__main__":
    entry()
