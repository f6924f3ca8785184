"""Reading an import in a process of its own, so that reading never waits for writing's GIL.

An import's reading (decoding JSON, checking every field, building rows and their COPY text) is
Python, and so is the little that writing needs between the database's answers. On two threads of one
process they take turns holding the GIL: the writing thread waits for the reader's GIL at each of the
dozens of moments a COPY needs it, and the database waits with it. With the reading in a child process
the three (reader, writer, database) run on their own, each as fast as its core allows.

The child is a `fork` of the importing process, taken before the import starts any thread: it inherits
the open input stream and the prepared writer and runs `read(channel)`, which sends the prepared
batches (`channel.send`) and asks the parent for what only the import's transaction can give
(`channel.ask`: the ids of judges and versions created in it). The parent reads the messages in order
(`messages`), answers the questions (`answer`), and writes every batch on its own connection, in the
import's one transaction; a refused import still writes nothing.

The child never uses the database connections it inherits (they are the parent's sessions): what it
needs of the database goes through connections it opens itself, and it ends with `os._exit`, so no
finaliser of an inherited object ever runs there. An error in the child is raised again in the parent,
by `messages`; an error in the parent kills the child. The child's peak memory is kept
(`child_peak_rss_mb`) beside the parent's own.

Used where `available()` says so: a platform that forks, and a process whose other threads, if any, are
idle threads of a pool (a fork copies only the calling thread; a lock a busy thread held would stay
locked in the child: reviewapp.idle_threads). Elsewhere, and with `TRIBUNAL_IMPORT_READING_PROCESS=false`,
an import reads on its own thread as before (`importers.pipeline`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import struct
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings

from reviewapp import idle_threads
from scoring.errors import TribunalError

_LENGTH = struct.Struct("!Q")


def available() -> bool:
    """Whether an import may read in a child process here and now: fork is there, and every other thread
    of the process is an idle pool thread (reviewapp.idle_threads). `ReadingProcess.start` asks again
    while it forks."""
    return (
        getattr(settings, "TRIBUNAL_IMPORT_READING_PROCESS", True)
        and hasattr(os, "fork")
        and idle_threads.only_idle_others()
    )


class ReadingFailed(TribunalError, RuntimeError):
    """The reading process ended without saying why (killed, out of memory), or with an error that could
    not be sent whole; the message says what is known."""


class Channel:
    """One end of the socket pair between the two processes: length-prefixed pickles."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.file = sock.makefile("rb", buffering=1 << 20)

    def send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        head = _LENGTH.pack(len(data))
        if len(data) < 65536:
            self.sock.sendall(head + data)
        else:  # a batch's COPY text: sent as it is, not copied once more to go behind its length
            self.sock.sendall(head)
            self.sock.sendall(data)

    def receive(self) -> Any:
        head = self.file.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            raise EOFError
        (length,) = _LENGTH.unpack(head)
        data = self.file.read(length)
        if len(data) < length:
            raise EOFError
        return pickle.loads(data)  # noqa: S301 - our own child's messages, over a socket pair only the two hold

    def ask(self, question: Any) -> Any:
        """Send a question and wait for the parent's answer (the child side)."""
        self.send(("ask", question))
        return self.receive()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class ReadingProcess:
    """`with ReadingProcess(read) as reading: for message in reading.messages(): ...`: `read(channel)`
    runs in a forked child; `messages` yields what it sends, in order, then stops when it returns."""

    def __init__(self, read: Callable[[Channel], None]):
        self.read = read
        self.pid = 0
        self.channel: Channel | None = None
        self.child_peak_rss_mb = 0.0
        self.finished = False

    def start(self) -> bool:
        """Fork the child, unless a thread of this process is at work right now (False: nothing started)."""
        parent_end, child_end = socket.socketpair()
        with idle_threads.quiet() as quiet:
            if not quiet:
                parent_end.close()
                child_end.close()
                return False
            with warnings.catch_warnings():
                # Python warns of any other thread of the OS process: a numerical library's pool, or an
                # idle pool of ours. Neither holds a lock the child needs (see reviewapp.idle_threads).
                warnings.filterwarnings("ignore", r".*use of fork\(\) may lead to deadlocks", DeprecationWarning)
                pid = os.fork()
        if pid == 0:  # the child: never returns
            parent_end.close()
            self._child(Channel(child_end))
        child_end.close()
        self.pid = pid
        self.channel = Channel(parent_end)
        return True

    def __enter__(self) -> ReadingProcess:
        if not self.pid and not self.start():
            raise ReadingFailed("a thread of this process is at work: the input cannot be read in a child now")
        return self

    def _child(self, channel: Channel) -> None:
        code = 0
        try:
            # The parent's signal handlers (a worker's, a server's) are not the reader's: it ends when told.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            self.read(channel)
            channel.send(("end",))
        except BaseException as error:  # sent to the parent, which raises it
            code = 1
            # Unless the parent is gone, or the error cannot be sent at all: it then sees the exit status.
            with contextlib.suppress(BaseException):
                channel.send(("raise", _portable(error)))
        finally:
            os._exit(code)

    def messages(self) -> Iterator[Any]:
        """The child's messages in the order sent; its error is raised here. A question comes as
        ("ask", question): answer it with `answer` before asking for the next message."""
        assert self.channel is not None
        while True:
            try:
                message = self.channel.receive()
            except (EOFError, OSError) as error:
                raise ReadingFailed(f"the reading process ended without finishing ({self._status()})") from error
            kind = message[0]
            if kind == "end":
                self.finished = True
                return
            if kind == "raise":
                self.finished = True
                raise _restored(message[1])
            yield message

    def answer(self, value: Any) -> None:
        assert self.channel is not None
        self.channel.send(value)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.channel is not None:
            self.channel.close()
        if self.pid:
            if not self.finished:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            _, _, usage = os.wait4(self.pid, 0)
            self.child_peak_rss_mb = usage.ru_maxrss / 1024  # Linux: kilobytes
            self.pid = 0

    def _status(self) -> str:
        """How the child ended, once its end of the socket is closed: it is exiting, so wait for it a
        moment (its end closes a little before the kernel reports it), then kill it."""
        deadline = time.monotonic() + 5
        try:
            while (found := os.waitpid(self.pid, os.WNOHANG))[0] == 0:
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    found = os.waitpid(self.pid, 0)
                    break
                time.sleep(0.01)
        except ChildProcessError:
            return "no status"
        status = found[1]
        self.pid = 0
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit status {os.waitstatus_to_exitcode(status)}"


def _portable(error: BaseException) -> Any:
    """An error as the parent can raise it again: itself when it survives pickling (with the child's
    traceback as its cause's text), else its type name, message and traceback."""
    from reviewapp.corpus.importers.records import RecordError

    if isinstance(error, RecordError):  # frozen: rebuilt from its fields
        return ("record", error.as_dict())
    try:
        pickle.loads(pickle.dumps(error))  # noqa: S301 - checking our own pickle
        return ("error", error, "".join(traceback.format_exception(error)))
    except Exception:
        return ("text", type(error).__name__, str(error), "".join(traceback.format_exception(error)))


def _restored(portable: Any) -> BaseException:
    from reviewapp.corpus.importers.records import RecordError

    kind = portable[0]
    if kind == "record":
        fields = portable[1]
        return RecordError(fields["file"], fields["line"], fields["field"], fields["message"])
    if kind == "error":
        error = portable[1]
        error.__cause__ = ReadingFailed(f"raised in the reading process:\n{portable[2]}")
        return error
    return ReadingFailed(f"{portable[1]}: {portable[2]}\n{portable[3]}")
