"""Leases: the catalog's locks, for processes on any number of hosts, on local disk or an object store.

A lease is a sequence of small records under ``<catalog>/_leases/<name>/``, one object per change,
named by its sequence number (``00000000000000000042.json``). The newest record is the lease's state: who
holds it (shared or exclusive, until when) and who waits for it alone. A change reads the newest record
``n`` and writes ``n + 1`` with a conditional write that fails when ``n + 1`` exists (``If-None-Match`` on
S3, an atomic link on local disk): of two processes that read the same state, one writes and the other
reads again, as in Delta's own log. A write counts only when no newer record exists after it (a process
that paused between its read and its write may have written a number long since cleaned away).

A holder renews its lease while it works: each renewal counts up the holder's ``renewals``. One that died
is passed over at once when it ran on the same host and its process is gone; one on another host once
the process looking at it has seen its record unrenewed for ``LEASE_SECONDS`` by its own monotonic
clock (``Watch``): hosts' wall clocks may disagree by more than a lease, and no host compares its clock
with another's.
Waiting for a lease alone (a rebuild) is itself recorded, and keeps new shared holders out until the
waiter has held and let go: a waiting rebuild goes first.

Fencing: a hold's epoch is the number of the record that admitted it, higher for every later holder. A
holder knows, by its own monotonic clock, how long its hold surely lasts: no other process passes it over
before ``LEASE_SECONDS`` after the start of its last renewal's write (it cannot have seen that renewal
earlier), and the hold counts as lasting for three quarters of that, the rest a margin for the commit
itself and for clocks that tick at slightly different rates. Before each commit the holder checks that its
holds still surely last (``Hold.check``: its own clock, no read of the store, which its renewals read every
quarter lease), and the commit carries the epochs (``Catalog.committing``): a holder that stalled past
its lease (a long pause, a partition from the store) may have been passed over and is refused, never
overwrites a newer holder's commit. A holder whose renewal finds its hold gone stops its own work at once
(``hold``'s ``on_lost``), so that a Spark job underway does not commit after the lease could be another's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from lakemeta.storage import Location

log = logging.getLogger(__name__)

LEASES = "_leases"
# A holder renews every quarter of this; a holder on another host that stopped is passed over after it.
LEASE_SECONDS = 60.0
SHARED, EXCLUSIVE = "shared", "exclusive"
_NAME_DIGITS = 20
# Records kept behind the newest: older ones are removed after each change.
_KEPT = 16
# The part of a lease's length that a hold counts as surely lasting after the start of a renewal (module
# docstring): renewals come every quarter, so a live holder keeps half a lease in hand.
_SURE_PART = 0.75


@functools.cache
def _boot_id() -> str:
    """This host's boot: a process id names a process only within one boot of one host."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip()
    except OSError:
        return str(psutil.boot_time())


@dataclass(frozen=True)
class Holder:
    """One hold or wait: who, what for, and until when unless renewed."""

    id: str
    mode: str
    purpose: str
    host: str
    boot: str
    pid: int
    process_started: float
    expires_at: float  # by the holder's host's wall clock: compared on that host alone
    renewals: int = 0

    @staticmethod
    def of_this_process(mode: str, purpose: str, seconds: float) -> Holder:
        return Holder(
            id=uuid.uuid4().hex,
            mode=mode,
            purpose=purpose,
            host=socket.gethostname(),
            boot=_boot_id(),
            pid=os.getpid(),
            process_started=psutil.Process().create_time(),
            expires_at=time.time() + seconds,
        )

    def on_this_host(self) -> bool:
        return self.host == socket.gethostname() and self.boot == _boot_id()

    def alive_here(self, now: float) -> bool:
        """For a holder of this host: unexpired by this host's clock and its process still running (a
        killed run's hold ends with it, without waiting for the expiry)."""
        if self.expires_at < now:
            return False
        try:
            return psutil.Process(self.pid).create_time() == self.process_started
        except psutil.NoSuchProcess:
            return False

    def describe(self) -> str:
        return f"{self.purpose} (process {self.pid} on {self.host})"


@dataclass(frozen=True)
class LeaseState:
    holders: tuple[Holder, ...] = ()
    waiting: tuple[Holder, ...] = ()  # processes waiting to hold alone, in the order they asked

    def live(self, alive: Callable[[Holder], bool]) -> LeaseState:
        return LeaseState(
            tuple(h for h in self.holders if alive(h)), tuple(w for w in self.waiting if alive(w))
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(text: str) -> LeaseState:
        record = json.loads(text)
        return LeaseState(
            tuple(Holder(**h) for h in record["holders"]), tuple(Holder(**w) for w in record["waiting"])
        )


class Watch:
    """Which holders a process takes for alive, on no clock but its own: a holder of this host by its
    process and this host's clock; one of another host until the watching process has seen the same
    renewal of it (its id and ``renewals``) for ``seconds`` of its monotonic clock. A holder first seen
    is alive for that long, whatever its record's time says."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self._seen: dict[str, tuple[int, float]] = {}  # holder id -> (renewals, first seen at)

    def __call__(self, holder: Holder) -> bool:
        if holder.on_this_host():
            return holder.alive_here(time.time())
        now = self.clock()
        renewals, since = self._seen.get(holder.id, (None, now))
        if renewals != holder.renewals:
            self._seen[holder.id] = (holder.renewals, now)
            return True
        return now - since < self.seconds


class LeaseLostError(RuntimeError):
    """A holder's lease expired and was taken over while it worked (it could not renew in time)."""


@dataclass
class Hold:
    """This process's hold of a lease: its ``epoch`` (the fencing token its commits carry) and, by this
    process's monotonic clock, until when it surely lasts (module docstring, "Fencing")."""

    lease: Lease
    holder: str
    purpose: str
    epoch: int
    sure_until: float
    lost: threading.Event = dataclasses.field(default_factory=threading.Event)

    def check(self) -> None:
        """Raise ``LeaseLostError`` unless the hold surely lasts (no other process can have passed it over
        yet) and no renewal found it gone: the fence every commit passes."""
        if not self.lost.is_set() and time.monotonic() < self.sure_until:
            return
        self.lost.set()
        raise self.lost_error()

    def lost_error(self) -> LeaseLostError:
        return LeaseLostError(
            f"the lease {self.lease.folder} of {self.purpose} (epoch {self.epoch}) was not renewed in time "
            "and may be another's: nothing more is committed under it; run it again"
        )


class Lease:
    """The lease ``name`` of the catalog at ``catalog`` (module docstring)."""

    def __init__(self, catalog: Location, name: str, seconds: float) -> None:
        self.folder = catalog / LEASES / name
        self.name = name
        self.seconds = seconds

    def state(self) -> LeaseState:
        """Who holds the lease and who waits for it, as last recorded (dead holders included)."""
        return self._newest()[1]

    def _numbers(self) -> list[int]:
        """The record numbers present, ascending (one listing)."""
        return sorted(n for n in map(_number, self.folder.files()) if n is not None)

    def _newest(self) -> tuple[int, LeaseState]:
        while True:
            numbers = self._numbers()
            if not numbers:
                return 0, LeaseState()
            try:
                return numbers[-1], LeaseState.from_json((self.folder / _record(numbers[-1])).read_text())
            except FileNotFoundError:  # removed by a newer writer's clean-up between listing and reading
                continue

    def _change(self, change: Callable[[LeaseState], LeaseState | None]) -> tuple[int, LeaseState]:
        """Apply ``change`` to the newest state and write it as the next record, again on a newer state
        until a write counts (no newer record follows it); returns the record's number and the state
        written, or those read where ``change`` gave None (nothing to write)."""
        while True:
            number, state = self._newest()
            changed = change(state)
            if changed is None:
                return number, state
            written = number + 1
            if not (self.folder / _record(written)).create_text(changed.to_json()):
                continue
            numbers = self._numbers()  # one listing both checks the write and finds old records
            if numbers[-1] != written:
                continue
            old = [_record(n) for n in numbers if n < written - _KEPT]
            with contextlib.suppress(Exception):  # clean-up is best effort; the next change tries again
                self.folder.delete(old)
            return written, changed

    @contextlib.contextmanager
    def hold(self, mode: str, purpose: str, on_lost: Callable[[], None] | None = None) -> Iterator[Hold]:
        """Hold the lease (``SHARED`` with other shared holders, or ``EXCLUSIVE``) while ``purpose`` runs;
        wait while it cannot be had. Renewed in the background until released; ``on_lost`` is called (from
        the renewing thread) if the hold is found gone or stops surely lasting meanwhile, to stop the work it
        protects. Ends with ``LeaseLostError`` once the hold was lost."""
        hold = self._acquire(Holder.of_this_process(mode, purpose, self.seconds))
        stop = threading.Event()
        renewal = threading.Thread(
            target=self._renew, args=(hold, stop, on_lost), daemon=True, name=f"lease {self.name}"
        )
        renewal.start()
        try:
            yield hold
        except BaseException as error:
            if hold.lost.is_set() and not isinstance(error, LeaseLostError):
                raise hold.lost_error() from error
            raise
        finally:
            stop.set()
            renewal.join()
            self._change(lambda state: _without(state, hold.holder))
        if hold.lost.is_set():
            raise hold.lost_error()

    def _acquire(self, me: Holder) -> Hold:
        delay, announced, watch = 0.05, False, Watch(self.seconds)
        while True:
            started = time.monotonic()
            number, outcome = self._change(lambda state: _admit(state, me, time.time(), self.seconds, watch))
            if any(h.id == me.id for h in outcome.holders):
                return Hold(self, me.id, me.purpose, number, started + _SURE_PART * self.seconds)
            if not announced:
                blocking = outcome.live(watch)
                ahead = [h.describe() for h in (*blocking.holders, *blocking.waiting) if h.id != me.id]
                log.info(
                    "waiting for the %s lease of %s, held by %s", self.name, self.folder, "; ".join(ahead)
                )
                announced = True
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _renew(self, hold: Hold, stop: threading.Event, on_lost: Callable[[], None] | None) -> None:
        """Renew ``hold`` every quarter lease until ``stop``; a renewal the store refuses or fails is tried
        again at the next, until the hold no longer surely lasts."""
        while not stop.wait(self.seconds / 4):
            started = time.monotonic()
            try:
                _, state = self._change(
                    functools.partial(_renewed, holder=hold.holder, expires_at=time.time() + self.seconds)
                )
            except Exception:
                log.warning("could not renew the %s lease of %s", self.name, self.folder, exc_info=True)
                state = None
            if state is not None and any(h.id == hold.holder for h in state.holders):
                hold.sure_until = started + _SURE_PART * self.seconds
                continue
            if state is None and time.monotonic() < hold.sure_until:
                continue
            log.error("the %s lease of %s was lost while %s ran", self.name, self.folder, hold.purpose)
            hold.lost.set()
            if on_lost is not None:
                on_lost()
            return


def _admit(
    state: LeaseState, me: Holder, now: float, seconds: float, alive: Callable[[Holder], bool]
) -> LeaseState | None:
    """The state with ``me`` holding when it may hold now; else, for a hold alone, with ``me`` in the
    queue of waiters; None when nothing needs writing. Holders and waiters that ``alive`` (a ``Watch``)
    takes for dead are dropped on the way; ``now`` is this host's time, for ``me``'s own expiry."""
    live = state.live(alive)
    fresh = dataclasses.replace(me, expires_at=now + seconds)
    unchanged = None if live == state else live
    if any(h.id == me.id for h in live.holders):
        return None
    others = tuple(w for w in live.waiting if w.id != me.id)
    if me.mode == SHARED:
        if any(h.mode == EXCLUSIVE for h in live.holders) or others:
            return unchanged
        return LeaseState((*live.holders, fresh), live.waiting)
    first = live.waiting[0].id if live.waiting else me.id
    if not live.holders and first == me.id:
        return LeaseState((fresh,), others)
    mine = next((w for w in live.waiting if w.id == me.id), None)
    if mine is None:  # join the queue
        return LeaseState(live.holders, (*live.waiting, fresh))
    if mine.expires_at - now < seconds / 2:  # keep the place in the queue: a renewal, as a holder's
        kept = dataclasses.replace(mine, expires_at=now + seconds, renewals=mine.renewals + 1)
        return LeaseState(live.holders, tuple(kept if w.id == me.id else w for w in live.waiting))
    return unchanged


def _renewed(state: LeaseState, holder: str, expires_at: float) -> LeaseState | None:
    if not any(h.id == holder for h in state.holders):
        return None
    holders = tuple(
        dataclasses.replace(h, expires_at=expires_at, renewals=h.renewals + 1) if h.id == holder else h
        for h in state.holders
    )
    return LeaseState(holders, state.waiting)


def _without(state: LeaseState, holder: str) -> LeaseState | None:
    if not any(h.id == holder for h in (*state.holders, *state.waiting)):
        return None
    return LeaseState(
        tuple(h for h in state.holders if h.id != holder), tuple(w for w in state.waiting if w.id != holder)
    )


def _record(number: int) -> str:
    return f"{number:0{_NAME_DIGITS}d}.json"


def _number(name: str) -> int | None:
    stem, dot, suffix = name.partition(".")
    return int(stem) if dot and suffix == "json" and stem.isdigit() and len(stem) == _NAME_DIGITS else None
