"""Writing output files atomically: a reader sees the old file or the new one,
never half of either, and a failure leaves nothing behind."""
from __future__ import annotations

import os
import tempfile


def write_atomic(path, data) -> None:
    """Write ``data`` (str as UTF-8, or bytes) to ``path`` through a temporary
    file in the same folder and an atomic rename."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".smtshape-", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        # mkstemp makes the file private (0600); give it the mode a plain open() would
        # (or keep the mode of the file it replaces)
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
