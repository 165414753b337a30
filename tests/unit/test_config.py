from pathlib import Path

import pytest

from lakemeta.config import load_config


def test_defaults_without_file_or_environment():
    config = load_config(environ={})
    assert config.lake is None and config.catalog is None
    assert config.spark_master == "local[*]"
    assert config.ingest.separator == "," and config.ingest.header is True


def test_precedence_file_then_environment_then_overrides(tmp_path: Path):
    config_file = tmp_path / "lakemeta.yaml"
    config_file.write_text("lake: /from/file\ncatalog: /from/file/catalog\ningest:\n  separator: ';'\n")
    environ = {"LAKEMETA_CONFIG": str(config_file), "LAKEMETA_LAKE": "/from/env"}
    config = load_config({"catalog": "/from/flag", "lake": None}, environ=environ)
    assert config.lake == Path("/from/env")
    assert config.catalog == Path("/from/flag")
    assert config.ingest.separator == ";" and config.ingest.header is True


def test_unknown_key_is_an_error(tmp_path: Path):
    config_file = tmp_path / "bad.yaml"
    config_file.write_text("lakes: /typo\n")
    with pytest.raises(ValueError, match="unknown configuration keys: lakes"):
        load_config(environ={"LAKEMETA_CONFIG": str(config_file)})


def test_missing_paths_are_named():
    with pytest.raises(ValueError, match="LAKEMETA_LAKE"):
        load_config(environ={}).require_paths()
