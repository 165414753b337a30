"""Peak resident memory of a benchmark's processes, per labelled interval, with a guard.

A PySpark benchmark runs three kinds of process: the driver (this process), the JVM (local mode: a child of
the driver; or a Spark Connect server given by its pid) and the Python workers (``pyspark.daemon`` and the
workers it forks, children of the JVM). ``ps`` at the end says nothing of a step that peaked and freed, so
a background thread samples the RSS of each every ``interval`` seconds and keeps the peaks of every open
interval (``measure``).

Workers forked by the daemon share pages with it: their summed RSS counts those pages once per worker, an
upper bound of what they hold.

The guard: when the RSS of all of them together passes ``limit_gb``, the sampler marks the open intervals
``exceeded``, calls ``on_exceeded`` (a benchmark writes what it measured so far), interrupts the main thread
(KeyboardInterrupt) and kills the JVMs it found and their workers, so that the main thread, waiting on the
JVM, gets an error and resumes. ``measure`` then raises ``MemoryLimitExceededError``. A driver that stays over
the limit ``grace_s`` later (busy in native code that no interrupt reaches) is ended with ``os._exit``.

    sampler = MemorySampler(limit_gb=14)
    with sampler:
        with sampler.measure("scan") as m:
            ...
        print(m.seconds, m.peaks)
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import psutil

MB = 1 << 20
PEAK_KEYS = ("driver_mb", "jvm_mb", "python_workers_mb", "python_worker_max_mb", "total_mb")
EXIT_CODE_OVER_LIMIT = 3


class MemoryLimitExceededError(RuntimeError):
    """The processes together passed the sampler's limit during an interval."""

    def __init__(self, measurement: Measurement) -> None:
        super().__init__(f"{measurement.label}: memory limit exceeded, peaks {measurement.peaks}")
        self.measurement = measurement


@dataclass
class Measurement:
    """One labelled interval: its peaks in MiB (``PEAK_KEYS``), seconds, and whether the guard fired."""

    label: str
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    peaks: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PEAK_KEYS, 0.0))
    exceeded: bool = False
    # the driver's RSS at the interval's first sample: Python keeps what an earlier step freed, so a peak
    # alone would charge a step with its predecessors' memory
    driver_start_mb: float | None = None

    def update(self, sample: dict[str, float]) -> None:
        if self.driver_start_mb is None:
            self.driver_start_mb = round(sample["driver_mb"], 1)
        for key in PEAK_KEYS:
            self.peaks[key] = max(self.peaks[key], round(sample[key], 1))

    def record(self) -> dict:
        """As a results file holds it."""
        start = self.driver_start_mb if self.driver_start_mb is not None else self.peaks["driver_mb"]
        return {
            "seconds": round(self.seconds, 2),
            **self.peaks,
            "driver_growth_mb": round(self.peaks["driver_mb"] - start, 1),
            "exceeded": self.exceeded,
        }


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return 0


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []


def _is_java(process: psutil.Process) -> bool:
    try:
        return process.name() == "java"
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _is_python(process: psutil.Process) -> bool:
    try:
        return "python" in process.name().lower()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


class MemorySampler:
    """Samples the driver, its JVMs (and ``jvm_pid``'s) and their Python workers every ``interval`` s."""

    def __init__(
        self,
        limit_gb: float = 14.0,
        interval: float = 0.2,
        jvm_pid: int | None = None,
        on_exceeded: Callable[[Measurement | None], None] | None = None,
        grace_s: float = 20.0,
    ) -> None:
        self.limit_bytes = int(limit_gb * (1 << 30))
        self.interval = interval
        self.on_exceeded = on_exceeded
        self.grace_s = grace_s
        self.driver = psutil.Process()
        self.extra = psutil.Process(jvm_pid) if jvm_pid is not None else None
        self.overall = Measurement("overall")
        self.exceeded = False
        self._open: list[Measurement] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exceeded_at = 0.0

    def jvms(self) -> list[psutil.Process]:
        """The JVMs: Java processes below the driver, and ``jvm_pid`` (or the Java processes below it)."""
        found = [p for p in _descendants(self.driver) if _is_java(p)]
        if self.extra is not None:
            found += [self.extra] if _is_java(self.extra) else []
            found += [p for p in _descendants(self.extra) if _is_java(p)]
        return list({p.pid: p for p in found}.values())

    def sample(self) -> tuple[dict[str, float], list[psutil.Process]]:
        """The RSS of each kind of process now, in MiB, and the processes that may be killed (the JVMs this
        process started and their workers; never ``jvm_pid``, which it did not start)."""
        jvms = self.jvms()
        workers = {p.pid: p for jvm in jvms for p in _descendants(jvm) if _is_python(p)}
        driver = _rss(self.driver)
        jvm = sum(_rss(p) for p in jvms)
        per_worker = [_rss(p) for p in workers.values()]
        sample = {
            "driver_mb": driver / MB,
            "jvm_mb": jvm / MB,
            "python_workers_mb": sum(per_worker) / MB,
            "python_worker_max_mb": max(per_worker, default=0) / MB,
            "total_mb": (driver + jvm + sum(per_worker)) / MB,
        }
        own = {p.pid for p in _descendants(self.driver)}
        killable = [p for p in [*jvms, *workers.values()] if p.pid in own]
        return sample, killable

    def _take(self) -> None:
        sample, killable = self.sample()
        with self._lock:
            self.overall.update(sample)
            for each in self._open:
                each.update(sample)
        if sample["total_mb"] * MB > self.limit_bytes:
            self._fire(killable)

    def _fire(self, killable: list[psutil.Process]) -> None:
        if self.exceeded:
            if time.monotonic() - self._exceeded_at > self.grace_s:
                os._exit(EXIT_CODE_OVER_LIMIT)  # the main thread never came back: stop before the machine
            return
        self.exceeded = True
        self._exceeded_at = time.monotonic()
        with self._lock:
            for each in self._open:
                each.exceeded = True
            current = self._open[-1] if self._open else None
        if self.on_exceeded is not None:
            try:
                self.on_exceeded(current)
            except Exception as error:  # the kill must happen whatever the callback does
                print(f"memory guard: on_exceeded failed: {error!r}", flush=True)
        _thread.interrupt_main()
        for process in killable:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def start(self) -> MemorySampler:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memory sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> MemorySampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def measure(self, label: str) -> Iterator[Measurement]:
        """An interval's peaks (sampled at its start and end too, so a short one has them); raises
        ``MemoryLimitExceededError`` when the guard fired during it, whatever the interval raised."""
        measurement = Measurement(label)
        with self._lock:
            self._open.append(measurement)
        try:
            self._take()
            try:
                yield measurement
            finally:
                measurement.seconds = time.perf_counter() - measurement.started
                if not measurement.exceeded:
                    self._take()
        except BaseException as error:
            if measurement.exceeded:
                raise MemoryLimitExceededError(measurement) from error
            raise
        finally:
            with self._lock:
                self._open.remove(measurement)
        if measurement.exceeded:
            raise MemoryLimitExceededError(measurement)
