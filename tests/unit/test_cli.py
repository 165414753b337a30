"""The `lakemeta` command's conventions: global options before or after the command, --version, the exit
codes."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import deltalake
import pyarrow as pa
import pytest

from lakemeta import __version__, cli
from lakemeta.config import Config
from lakemeta.storage import Location


def _config(argv: list[str]) -> Config:
    return cli.config_of(cli.build_parser().parse_args(argv), environ={})


GLOBAL_OPTIONS = [
    ("--master", "spark://10.0.0.5:7077", lambda config: config.spark_master, "spark://10.0.0.5:7077"),
    ("--remote", "sc://10.0.0.5:15002", lambda config: config.spark_remote, "sc://10.0.0.5:15002"),
    ("--set", "sketches.precision=12", lambda config: config.sketches.precision, 12),
    ("--lake", "/data/lake", lambda config: config.lake, Location.parse("/data/lake")),
    ("--catalog", "/data/catalog", lambda config: config.catalog, Location.parse("/data/catalog")),
]


@pytest.mark.parametrize("command", [["show", "runs"], ["run"], ["ingest", "data.csv"]])
@pytest.mark.parametrize(
    ("option", "value", "read", "expected"), GLOBAL_OPTIONS, ids=[o[0] for o in GLOBAL_OPTIONS]
)
def test_a_global_option_works_before_and_after_the_command(command, option, value, read, expected):
    before = _config([option, value, *command])
    after = _config([*command, option, value])
    assert read(before) == read(after) == expected
    assert before == after
    assert read(_config(command)) != expected  # the option, not a default, made the difference


def test_the_config_option_works_before_and_after_the_command(tmp_path: Path):
    settings = tmp_path / "lakemeta.yaml"
    settings.write_text("spark_master: spark://config-file:7077\ningest:\n  separator: ';'\n")
    for argv in (
        ["--config", str(settings), "ingest", "a.csv"],
        ["ingest", "a.csv", "--config", str(settings)],
    ):
        config = _config(argv)
        assert (config.spark_master, config.ingest.separator) == ("spark://config-file:7077", ";")


def test_after_the_command_an_option_overrides_the_one_before_and_settings_add_up():
    before = ["--master", "local[1]", "--set", "sketches.precision=12"]
    config = _config([*before, "run", "--master", "local[2]", "--set", "fks.inclusion_threshold=0.95"])
    assert config.spark_master == "local[2]"
    assert (config.sketches.precision, config.fks.inclusion_threshold) == (12, 0.95)


def test_a_setting_of_a_section_a_flag_also_sets_stays_in_force():
    config = _config(["--set", "ingest.encoding=ISO-8859-1", "ingest", "--separator", ";", "a.csv"])
    assert (config.ingest.encoding, config.ingest.separator) == ("ISO-8859-1", ";")


def test_ingest_all_text_sets_the_option_and_leaves_the_configured_one_when_absent(tmp_path: Path):
    assert _config(["ingest", "--all-text", "a.csv"]).ingest.all_text is True
    assert _config(["ingest", "a.csv"]).ingest.all_text is False
    assert _config(["--set", "ingest.all_text=true", "ingest", "a.csv"]).ingest.all_text is True


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"lakemeta {__version__}"


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["show", "--help"]])
def test_help_documents_every_exit_code(argv: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        cli.main(argv)
    text = capsys.readouterr().out
    assert "exit codes:" in text
    for code, meaning in [
        (0, "done"),
        (1, "the quality gate failed"),
        (2, "usage or input error"),
        (3, "internal"),
    ]:
        assert f"  {code}  {meaning}" in text


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["show", "--no-such-option", "runs"])
    assert exit_info.value.code == cli.EXIT_USAGE == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "nope"], "unknown catalog table 'nope'"),
        (["show", "runs"], "is not a Delta table"),
        (["show", "runs", "--set", "nonsense"], "a setting is KEY=VALUE"),
        (["show", "runs", "--set", "ingest.quote='"], "the value is not YAML"),
        (["--config", "/no/such/lakemeta.yaml", "show", "runs"], "No such file"),
    ],
)
def test_an_input_error_exits_2_with_the_message(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
):
    assert cli.main([*argv, "--catalog", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("lakemeta show: ") and message in error and "Traceback" not in error


def test_ingest_of_a_missing_file_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    missing = tmp_path / "no-such.csv"
    assert cli.main(["ingest", "--lake", str(tmp_path / "lake"), str(missing)]) == 2
    assert capsys.readouterr().err.strip() == f"lakemeta ingest: {missing}: no such file or folder"


def test_an_unexpected_error_exits_3_with_the_traceback_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    def broken(args: argparse.Namespace, config: Config) -> int:
        return {}["a defect"]

    monkeypatch.setitem(cli.COMMANDS, "show", broken)
    assert cli.main(["show", "runs", "--catalog", str(tmp_path)]) == cli.EXIT_INTERNAL == 3
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "lakemeta show: internal error" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is KeyError


class _RecordingPipeline:
    """Stands for the pipeline `lakemeta rebuild` drives: records the steps asked of it."""

    def __init__(self, audit_passes: bool = True) -> None:
        self.steps: list[str] = []
        self.audit_passes = audit_passes

    def rebuild(self) -> None:
        self.steps.append("rebuild")

    def audit(self) -> SimpleNamespace:
        self.steps.append("audit")
        return SimpleNamespace(
            success=self.audit_passes, path="audit-results", failures=["a failed check"], data_docs=None
        )

    def publish(self, audit: SimpleNamespace) -> int:
        self.steps.append("publish")
        return 13


@pytest.fixture
def pipeline(monkeypatch: pytest.MonkeyPatch) -> _RecordingPipeline:
    recording = _RecordingPipeline()
    monkeypatch.setattr(cli, "_pipeline", lambda config, metastore=False: recording)
    return recording


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


REBUILD = ["rebuild", "--lake", "/data/lake", "--catalog", "/data/catalog"]


def test_rebuild_on_a_terminal_goes_on_when_the_word_is_typed(
    pipeline: _RecordingPipeline, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(sys, "stdin", _Terminal("rebuild\n"))
    assert cli.main(REBUILD) == 0
    assert "type rebuild to go on" in capsys.readouterr().out
    assert pipeline.steps == ["rebuild", "audit", "publish"]


@pytest.mark.parametrize("typed", ["y\n", "yes\n", ""], ids=["y", "yes", "end of input"])
def test_rebuild_on_a_terminal_drops_nothing_unless_the_word_is_typed(
    typed: str,
    pipeline: _RecordingPipeline,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setattr(sys, "stdin", _Terminal(typed))
    assert cli.main(REBUILD) == 2
    assert "not confirmed; nothing dropped" in capsys.readouterr().err
    assert pipeline.steps == []


def test_rebuild_with_yes_does_not_ask_and_a_failed_audit_exits_1(
    pipeline: _RecordingPipeline, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    pipeline.audit_passes = False
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    assert cli.main([*REBUILD, "--yes"]) == cli.EXIT_AUDIT_FAILED == 1
    assert "quality gate failed, nothing published" in capsys.readouterr().err
    assert pipeline.steps == ["rebuild", "audit"]


def test_rebuild_without_a_terminal_or_yes_exits_2_and_drops_nothing(tmp_path: Path):
    catalog = tmp_path / "catalog"
    counters = pa.table({"table_name": ["t"], "column_name": ["a"], "bucket": [1], "rho": [2], "count": [3]})
    deltalake.write_deltalake(catalog / "state" / "hll_counters", counters)
    locations = ["--lake", str(tmp_path / "lake"), "--catalog", str(catalog)]
    result = subprocess.run(
        [sys.executable, "-m", "lakemeta.cli", "rebuild", *locations],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "stdin is not a terminal: give --yes; nothing dropped" in result.stderr
    state = deltalake.DeltaTable(catalog / "state" / "hll_counters")
    assert (state.version(), state.to_pyarrow_table().to_pylist()) == (0, counters.to_pylist())


def test_maintain_compacts_the_catalogs_tables_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    catalog = tmp_path / "catalog"
    for value in range(3):
        deltalake.write_deltalake(str(catalog / "runs"), pa.table({"n": [value]}), mode="append")
    schema = pa.schema(
        [
            ("table_name", pa.string()),
            ("version", pa.int64()),
            ("published_at", pa.timestamp("us", tz="UTC")),
            ("audit", pa.string()),
        ]
    )
    deltalake.write_deltalake(str(catalog / "published"), schema.empty_table())

    assert cli.main(["maintain", "--catalog", str(catalog), "--set", "maintenance.retention_days=0"]) == 0

    assert "2 tables maintained: 3 data files before, 1 after, 3 deleted by VACUUM" in capsys.readouterr().out
    assert len(deltalake.DeltaTable(str(catalog / "runs")).file_uris()) == 1
