"""The catalog's leases (``lakemeta.catalog.leases``), on local disk and in the S3 server: steps share the
state lease, a rebuild holds it alone, a rebuild that waits goes before the steps that ask after it, a
holder that died is passed over, processes racing for a lease alone never hold it together, and a holder
that stalled past its lease is fenced off: its commit is refused.

Each side is its own catalog handle in a thread of this process, or its own process; the leases need no
Spark session."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import signal
import threading
import time

import pyarrow as pa
import pytest

from lakemeta import crash_points
from lakemeta.catalog import Catalog
from lakemeta.catalog.leases import (
    EXCLUSIVE,
    SHARED,
    Holder,
    Lease,
    LeaseLostError,
    LeaseState,
    _renewed,
    _without,
)
from lakemeta.catalog.store import LEASES_METADATA
from lakemeta.storage import Location


def test_steps_hold_the_state_side_by_side(root: Location) -> None:
    first, second = Catalog(None, root), Catalog(None, root)
    with first.using_state("one step"):
        inside = threading.Event()

        def other_step() -> None:
            with second.using_state("another step"):
                inside.set()

        thread = threading.Thread(target=other_step)
        thread.start()
        assert inside.wait(10), "a second step waited for the first"
        thread.join(10)


def test_a_waiting_rebuild_goes_before_the_steps_that_ask_after_it(root: Location) -> None:
    running, rebuilding, later = (Catalog(None, root) for _ in range(3))
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
    lease = Lease(root, "state", 60)
    deadline = time.monotonic() + 10
    while not lease.state().waiting:  # the rebuild has asked and waits
        assert time.monotonic() < deadline, "the rebuild never recorded that it waits"
        time.sleep(0.01)
    threads.append(threading.Thread(target=later_step))
    threads[2].start()
    time.sleep(1)
    # Shared holds alone would let the later step in beside the long one here, ahead of the rebuild.
    assert events == ["step in"]
    finish_step.set()
    for thread in threads:
        thread.join(30)
    assert events == ["step in", "step out", "rebuild", "later step"]


def _hold_and_die(uri: str, ready) -> None:
    with Lease(Location(uri), "catalog", 3600).hold(EXCLUSIVE, "a run that is killed"):
        ready.set()
        time.sleep(3600)


def test_a_holder_killed_on_this_host_is_passed_over_at_once(root: Location) -> None:
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold_and_die, args=(root.uri, ready))
    holder.start()
    assert ready.wait(60)
    os.kill(holder.pid, signal.SIGKILL)  # its lease would last an hour
    holder.join(10)
    started = time.monotonic()
    with Lease(root, "catalog", 3600).hold(EXCLUSIVE, "the next run"):
        waited = time.monotonic() - started
    assert waited < 5


def test_a_holder_on_another_host_is_passed_over_when_its_lease_expires(root: Location) -> None:
    lease = Lease(root, "catalog", 2)
    elsewhere = Holder(
        "gone", EXCLUSIVE, "a run on a host that died", "other-host", "boot", 1, 0.0, time.time() + 2
    )
    assert (lease.folder / "00000000000000000001.json").create_text(LeaseState((elsewhere,)).to_json())
    started = time.monotonic()
    with lease.hold(SHARED, "a step"):
        waited = time.monotonic() - started
    assert 1 < waited < 10
    assert [h.id for h in lease.state().holders] == []


def _held_elsewhere(lease: Lease, clock_offset: float) -> None:
    """A holder on another host whose wall clock is ``clock_offset`` seconds off this one's: its record's
    expiry is by its clock."""
    elsewhere = Holder(
        "elsewhere", EXCLUSIVE, "a run on another host", "other-host", "boot", 1, 0.0,
        time.time() + clock_offset + 2,
    )  # fmt: skip
    assert (lease.folder / "00000000000000000001.json").create_text(LeaseState((elsewhere,)).to_json())


def test_a_holder_on_a_host_whose_clock_is_ahead_is_passed_over_once_it_stops_renewing(
    root: Location,
) -> None:
    lease = Lease(root, "catalog", 2)
    _held_elsewhere(lease, clock_offset=60)  # its record says it holds for a minute more
    started = time.monotonic()
    with lease.hold(SHARED, "a step"):
        waited = time.monotonic() - started
    assert 1 < waited < 10  # two seconds of this process's clock without a renewal


def test_a_holder_on_a_host_whose_clock_is_behind_keeps_its_lease_while_it_renews(root: Location) -> None:
    lease = Lease(root, "catalog", 2)
    _held_elsewhere(lease, clock_offset=-3600)  # by this host's clock its record expired an hour ago
    released = threading.Event()

    def other_host() -> None:  # renews every half second for four seconds, then lets go
        for _ in range(8):
            time.sleep(0.5)
            lease._change(lambda state: _renewed(state, "elsewhere", expires_at=time.time() - 3600))
        lease._change(lambda state: _without(state, "elsewhere"))
        released.set()

    renewing = threading.Thread(target=other_host)
    renewing.start()
    with lease.hold(EXCLUSIVE, "a step"):
        assert released.is_set()  # held only once the other host let go
    renewing.join(10)


def _count_under_lease(uri: str, barrier, rounds: int, results) -> None:
    lease = Lease(Location(uri), "catalog", 60)
    barrier.wait()
    spans = []
    for _ in range(rounds):
        with lease.hold(EXCLUSIVE, f"process {os.getpid()}"):
            entered = time.time()
            time.sleep(0.02)
            spans.append((entered, time.time()))
    results.put(json.dumps(spans))


def test_processes_racing_for_a_lease_alone_never_hold_it_together(root: Location) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(3), context.Queue()
    processes = [
        context.Process(target=_count_under_lease, args=(root.uri, barrier, 5, results)) for _ in range(3)
    ]
    for process in processes:
        process.start()
    spans = sorted(span for _ in processes for span in json.loads(results.get(timeout=120)))
    for process in processes:
        process.join(30)
    assert len(spans) == 15
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans))


@pytest.mark.parametrize("mode", [SHARED, EXCLUSIVE])
def test_a_released_lease_leaves_no_holder(root: Location, mode: str) -> None:
    lease = Lease(root, "state", 60)
    with lease.hold(mode, "a step"):
        assert [h.mode for h in lease.state().holders] == [mode]
    assert lease.state() == LeaseState()


def _keys(table: str) -> pa.Table:
    return pa.table({"table_name": [table], "columns": [["id"]]})


def _stall_before_committing(uri: str, paused, go, outcome) -> None:
    """Commit ``a``'s keys under a two-second lease, stopping inside the table's write lease just before the
    commit until ``go`` (the test stops this process meanwhile, renewals and all); report how it ended."""

    def pause(label: str) -> None:
        if label == "before replace unique_column_combinations":
            paused.set()
            go.wait()

    crash_points.on_reach = pause
    try:
        Catalog(None, Location(uri), lease_seconds=2).replace_small("unique_column_combinations", _keys("a"))
        outcome.put("committed")
    except LeaseLostError as error:
        outcome.put(f"refused: {error}")


def test_a_holder_that_stalled_past_its_lease_is_refused_its_commit(root: Location) -> None:
    """Two holders race for a table's write lease: the first stalls (stopped) past its lease, the second is
    let in and commits; the first, woken, finds its hold gone and commits nothing over the second's."""
    context = multiprocessing.get_context("spawn")
    paused, go, outcome = context.Event(), context.Event(), context.Queue()
    stalled = context.Process(target=_stall_before_committing, args=(root.uri, paused, go, outcome))
    stalled.start()
    assert paused.wait(60)
    os.kill(stalled.pid, signal.SIGSTOP)  # a long pause: its renewals stop too
    catalog = Catalog(None, root, lease_seconds=2)
    started = time.monotonic()
    catalog.replace_small("unique_column_combinations", _keys("b"))
    assert time.monotonic() - started > 1  # let in once the stalled hold had expired
    os.kill(stalled.pid, signal.SIGCONT)  # woken first: an event's waiter takes part in its setting
    go.set()
    ended = outcome.get(timeout=60)
    stalled.join(30)
    assert ended.startswith("refused: ") and "was not renewed in time" in ended
    assert catalog.read_small("unique_column_combinations")["table_name"].to_pylist() == ["b"]
    history = catalog.delta_table("unique_column_combinations").history()
    epochs = [json.loads(commit[LEASES_METADATA]) for commit in history if LEASES_METADATA in commit]
    assert len(epochs) == 1 and set(epochs[0]) == {"tables/unique_column_combinations"}


def test_a_commit_carries_the_epochs_of_every_lease_it_is_made_under(root: Location) -> None:
    catalog = Catalog(None, root)
    catalog.replace_small("unique_column_combinations", _keys("a"))
    with catalog.using_state("a step"):
        catalog.replace_small("unique_column_combinations", _keys("b"))
    newest, first = (
        json.loads(commit[LEASES_METADATA])
        for commit in catalog.delta_table("unique_column_combinations").history()
    )
    assert set(first) == {"tables/unique_column_combinations"}
    assert set(newest) == {"state", "tables/unique_column_combinations"}
    # a later holder of a lease has a higher epoch: the fencing token grows
    assert newest["tables/unique_column_combinations"] > first["tables/unique_column_combinations"]


def test_a_holder_whose_hold_is_taken_stops_its_work_and_ends_with_the_loss(root: Location) -> None:
    lease = Lease(root, "catalog", 1)
    stopped = threading.Event()
    with (
        pytest.raises(LeaseLostError, match="was not renewed in time"),
        lease.hold(EXCLUSIVE, "a run", on_lost=stopped.set) as hold,
    ):
        lease._change(lambda state: _without(state, hold.holder))  # passed over by another process
        assert stopped.wait(5), "the work was not stopped when the hold was found gone"
        with pytest.raises(LeaseLostError):
            hold.check()
    assert lease.state() == LeaseState()


def test_a_hold_not_renewed_in_time_fails_its_check(root: Location) -> None:
    lease = Lease(root, "catalog", 60)
    with pytest.raises(LeaseLostError), lease.hold(EXCLUSIVE, "a run") as hold:
        hold.check()  # renewed recently enough, and still recorded
        hold.sure_until = time.monotonic()  # as if its renewals had failed for three quarters of a lease
        hold.check()
