"""A free TCP port on the loopback interface, for the servers lakemeta starts beside itself (a Spark
Connect server of the demo or a benchmark, the reference S3 server, the tests' Spark cluster)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on at this moment (the OS's choice of an ephemeral one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
