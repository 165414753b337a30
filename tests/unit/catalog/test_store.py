"""The state lock (``Catalog.using_state`` / ``Catalog.replacing_state``): steps share it, a rebuild holds it
alone, and a rebuild that waits goes before the steps that ask after it.

Each side is its own catalog handle (its own open files, so its own flock locks, as another process has),
in a thread of this process; the lock needs no Spark session."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

from lakemeta.catalog import Catalog


def _held_alone(path: Path) -> bool:
    """Whether some handle holds ``path`` exclusively (a shared lock cannot be had now)."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_steps_hold_the_state_side_by_side(tmp_path: Path) -> None:
    first, second = Catalog(None, tmp_path), Catalog(None, tmp_path)
    with first.using_state("one step"):
        inside = threading.Event()

        def other_step() -> None:
            with second.using_state("another step"):
                inside.set()

        thread = threading.Thread(target=other_step)
        thread.start()
        assert inside.wait(10), "a second step waited for the first"
        thread.join(10)


def test_a_waiting_rebuild_goes_before_the_steps_that_ask_after_it(tmp_path: Path) -> None:
    running, rebuilding, later = (Catalog(None, tmp_path) for _ in range(3))
    events: list[str] = []
    step_inside, finish_step = threading.Event(), threading.Event()

    def long_step() -> None:
        with running.using_state("a long step"):
            events.append("step in")
            step_inside.set()
            assert finish_step.wait(30)
            events.append("step out")

    def rebuild() -> None:
        with rebuilding.replacing_state():
            events.append("rebuild")

    def later_step() -> None:
        with later.using_state("a later step"):
            events.append("later step")

    threads = [threading.Thread(target=long_step)]
    threads[0].start()
    assert step_inside.wait(10)
    threads.append(threading.Thread(target=rebuild))
    threads[1].start()
    deadline = time.monotonic() + 10
    while not _held_alone(tmp_path / "_state_turnstile"):  # the rebuild has asked and waits
        assert time.monotonic() < deadline, "the rebuild never took the turnstile"
        time.sleep(0.01)
    threads.append(threading.Thread(target=later_step))
    threads[2].start()
    time.sleep(1)
    # flock alone would let the later step share the lock with the long one here, ahead of the rebuild.
    assert events == ["step in"]
    finish_step.set()
    for thread in threads:
        thread.join(30)
    assert events == ["step in", "step out", "rebuild", "later step"]
