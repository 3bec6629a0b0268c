"""Turns a blocking call with callbacks into a generator.

The call runs on a worker thread (ctypes releases the GIL while it is in
C); each callback puts its event on a queue that the generator yields from.
Closing the generator early (break, garbage collection) cancels the call
and waits for it to return, so nothing runs on after the loop.
"""

import queue
import threading

from ._lib import Cancelled

_END = object()


class Stream:
    """Iterate over it for the events; ``result`` holds what the call
    returned once the iteration has ended."""

    def __init__(self, run, cancel):
        self._queue = queue.Queue()
        self._cancel = cancel
        self._error = None
        self.result = None
        self.cancelled = False
        self._thread = threading.Thread(target=self._main, args=(run,), daemon=True)
        self._thread.start()

    def _main(self, run):
        try:
            self.result = run(self._queue.put)
        except Cancelled as e:
            self.cancelled = True
            self.result = getattr(e, "partial", None)
        except BaseException as e:  # handed to the consumer's thread
            self._error = e
        finally:
            self._queue.put(_END)

    def cancel(self):
        """Stops the call at its next token or chunk (any thread)."""
        self._cancel()

    def __iter__(self):
        finished = False
        try:
            while True:
                item = self._queue.get()
                if item is _END:
                    finished = True
                    break
                yield item
        finally:
            if not finished:
                self._cancel()
            self._thread.join()
        if self._error is not None:
            raise self._error
