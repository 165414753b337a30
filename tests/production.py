"""infra/production's files as the tests read them: its systemd units (what each starts, with which
environment) and its environment and Spark settings files, moved from the deployment's paths, hosts and
ports to a test's (``Placement``) so that a test starts the processes the units describe."""

from __future__ import annotations

import configparser
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCTION = REPO / "infra" / "production"
UNITS = PRODUCTION / "systemd"


class _Repeated(dict):
    """configparser's section dict keeping every value of a key that repeats (EnvironmentFile=,
    ExecStartPre=), joined by newlines as a multi-line value is."""

    def __setitem__(self, key, value):
        if isinstance(value, list) and key in self:
            self[key].extend(value)
            return
        super().__setitem__(key, value)


def unit_text(name: str) -> str:
    return (UNITS / f"{name}.service").read_text()


def service_settings(text: str) -> dict[str, list[str]]:
    """A unit's [Service] settings, each with every value it is given, in order."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, dict_type=_Repeated)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(text)
    return {key: value.split("\n") for key, value in parser["Service"].items()}


def environment_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of a systemd EnvironmentFile (comments and blank lines skipped; the value is the
    rest of the line, spaces and quotes included, as systemd reads an unquoted value)."""
    pairs = (line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {key.strip(): value for key, value in pairs}


def spark_defaults(text: str) -> dict[str, str]:
    lines = text.splitlines()
    return dict(line.split(maxsplit=1) for line in lines if line.strip() and not line.startswith("#"))


def expanded(command: str, env: dict[str, str]) -> list[str]:
    """A unit's command line as systemd runs it: ``${VAR}`` from its environment, split as a shell would,
    a leading ``-`` (failure ignored) dropped."""
    command = re.sub(r"\$\{(\w+)\}", lambda found: env[found.group(1)], command)
    return shlex.split(command.lstrip("-"))


@dataclass
class Placement:
    """Where a test puts what the deployment's files name: the repository for /opt/lakemeta, folders of its
    own for /etc, /var/lib, /var/log and /var/cache, 127.0.0.1 for every host, a free port for each of
    the deployment's (``ports``: the deployment's port -> the test's)."""

    root: Path
    java_home: str
    ports: dict[int, int] = field(default_factory=dict)
    lake_tables: list[str] = field(default_factory=list)  # a deployment test's lake

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    def moved(self, text: str) -> str:
        """``text`` (a unit, an environment file, spark-defaults.conf) with the test's paths, hosts and
        ports."""
        for deployed, local in {
            "/opt/lakemeta": str(REPO),
            "/etc/lakemeta": str(self.etc),
            "/var/lib/lakemeta": str(self.root / "var"),
            "/var/log/lakemeta": str(self.root / "log"),
            "/var/cache/lakemeta": str(self.root / "cache"),
            "/usr/lib/jvm/java-17-openjdk-amd64": self.java_home,
            "SPARK_MASTER_HOST": "127.0.0.1",
            "AIRFLOW_HOST_IP": "127.0.0.1",
        }.items():
            text = text.replace(deployed, local)
        for deployed, local in self.ports.items():
            text = re.sub(rf"(?<!\d){deployed}(?!\d)", str(local), text)
        return text

    def unit(self, name: str) -> dict[str, list[str]]:
        return service_settings(self.moved(unit_text(name)))

    def environment(self, name: str, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment unit ``name`` runs with: ``base`` (the test's, for what a host provides), its
        ``Environment=`` lines and its ``EnvironmentFile=`` files (read from the test's /etc), in order."""
        settings = self.unit(name)
        env = dict(os.environ if base is None else base)
        for line in settings.get("Environment", []):
            key, value = line.split("=", 1)
            env[key] = value
        for path in settings.get("EnvironmentFile", []):
            env.update(environment_file(Path(path.lstrip("-")).read_text()))
        return env

    def commands(self, name: str, kind: str = "ExecStart") -> list[list[str]]:
        """Unit ``name``'s commands of ``kind`` (ExecStartPre, ExecStart, ExecStartPost), expanded."""
        env = self.environment(name)
        return [expanded(command, env) for command in self.unit(name).get(kind, [])]
