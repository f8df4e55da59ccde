"""``progress=True``: one line on stderr, redrawn in place, while a load runs."""

from __future__ import annotations

import sys
from typing import Optional, TextIO

from .results import Progress


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


class Bar:
    """Draws each event on ``stream`` (stderr), only when it is a terminal."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.shown = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = 0

    def __call__(self, event: Progress) -> None:
        if not self.shown:
            return
        if event.done:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            return
        if event.phase == "load":
            total = event.input_bytes_total
            read = event.input_bytes_read
            done = f"{_bytes(read)}/{_bytes(total)} ({100 * read // total}%)" if total else f"{_bytes(read)} read"
            rate = event.rows_loaded / event.seconds if event.seconds > 0 else 0.0
            line = f"{event.seconds:6.1f}s {done} | {event.rows_loaded:,} rows | {rate:,.0f} rows/s"
            if event.rows_rejected:
                line += f" | {event.rows_rejected:,} rejected"
        else:
            doing = {
                "start": "connecting, reading the table and the inputs",
                "final commit": "final commit",
            }.get(event.phase, event.phase_detail or event.phase)
            line = f"{event.seconds:6.1f}s {doing}"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = max(self.width, len(line))
