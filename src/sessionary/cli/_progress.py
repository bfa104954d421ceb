"""Progress of a long command, on standard error: a rich bar on a terminal, else lines.

On a terminal the bar shows what is done, the rate and the time left; when standard
error is a pipe or a file, a plain line is written at each tenth of the work (or every
`every` units when the total is unknown), so a log shows progress without control codes.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

__all__ = ["Reporter"]


def _bytes(count: float) -> str:
    return f"{count / 1e6:,.1f} MB" if count >= 1e5 else f"{count / 1e3:,.1f} kB"


def _amount(done: float, total: float | None, unit: str) -> str:
    if unit == "bytes":
        of = f" of {_bytes(total)}" if total else ""
        return f"{_bytes(done)}{of} read"
    return f"{int(done):,}/{int(total):,} {unit}" if total else f"{int(done):,} {unit}"


class Reporter:
    """Reports how far a command has got.

    Args:
        console: Standard error's console.
        label: What is being done, e.g. "import".
        total: How much there is to do, or None if unknown.
        unit: "bytes" (shown as MB, with a transfer rate) or a plural noun.
        every: Without a total, write a plain line every this many units.
    """

    def __init__(
        self, console: Console, label: str, total: float | None, unit: str, every: float = 1e7
    ) -> None:
        self.console, self.label, self.total, self.unit, self.every = (
            console, label, total, unit, every,
        )  # fmt: skip
        self.done = 0.0
        self.detail = ""
        self._next = self._step()
        self._written = 0.0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def _step(self) -> float:
        return self.total / 10 if self.total else self.every

    def __enter__(self) -> Reporter:
        if self.console.is_terminal:
            amounts = (
                [DownloadColumn(), TransferSpeedColumn()]
                if self.unit == "bytes"
                else [MofNCompleteColumn()]
            )
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                *amounts,
                TimeRemainingColumn(),
                TextColumn("{task.fields[detail]}"),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, detail="")
        return self

    def advance(self, amount: float, detail: str | None = None) -> None:
        """Add `amount` to what is done; `detail` replaces the text after the bar."""
        self.done += amount
        if detail is not None:
            self.detail = detail
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, detail=self.detail)
        elif self.done >= self._next:
            self._line()
            while self._next <= self.done:
                self._next += self._step()

    def _line(self) -> None:
        detail = f", {self.detail}" if self.detail else ""
        amount = _amount(self.done, self.total, self.unit)
        self.console.file.write(f"{self.label}: {amount}{detail}\n")
        self.console.file.flush()
        self._written = self.done

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif exc is None and self.done > self._written:
            self._line()  # where it ended
