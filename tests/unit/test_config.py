from pathlib import Path

import pytest

from lakemeta.config import load_config, parse_settings
from lakemeta.storage import Location


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
    assert config.lake == Location("/from/env")
    assert config.catalog == Location("/from/flag")
    assert config.ingest.separator == ";" and config.ingest.header is True


def test_unknown_key_is_an_error(tmp_path: Path):
    config_file = tmp_path / "bad.yaml"
    config_file.write_text("lakes: /typo\n")
    with pytest.raises(ValueError, match="unknown configuration keys: lakes"):
        load_config(environ={"LAKEMETA_CONFIG": str(config_file)})


def test_missing_paths_are_named():
    with pytest.raises(ValueError, match="LAKEMETA_LAKE"):
        load_config(environ={}).require_paths()


def test_settings_override_the_file_and_keep_their_types(tmp_path: Path):
    config_file = tmp_path / "lakemeta.yaml"
    config_file.write_text("fks:\n  inclusion_threshold: 0.8\n  max_key_columns: 3\n")
    settings = ["fks.inclusion_threshold=0.95", "fks.require_name_match=True", "spark_master=local[2]"]
    config = load_config(parse_settings(settings), environ={"LAKEMETA_CONFIG": str(config_file)})
    assert config.fks.inclusion_threshold == 0.95 and config.fks.max_key_columns == 3
    assert config.fks.require_name_match is True and config.spark_master == "local[2]"
    assert load_config(parse_settings(["inds.filters=web"]), environ={}).inds.filters == "web"


@pytest.mark.parametrize(
    "setting",
    ["fks.inclusion_threshold", "=3", "fks.nope=1", "fks.inclusion_threshold=2", "scan.driver_max_pairs=-1"],
)
def test_bad_settings_are_named(setting: str):
    with pytest.raises(ValueError, match=r"KEY=VALUE|nope|inclusion_threshold|driver_max_pairs"):
        load_config(parse_settings([setting]), environ={})


@pytest.mark.parametrize(
    ("given", "uri"),
    [
        ("s3://bucket/lake/", "s3://bucket/lake"),
        ("s3a://bucket/lake", "s3://bucket/lake"),
        ("file:///data/lake", "/data/lake"),
        ("/data/./lake", "/data/lake"),
    ],
)
def test_locations_are_paths_or_uris(given: str, uri: str):
    assert load_config({"lake": given}, environ={}).lake == Location(uri)
    assert load_config(environ={"LAKEMETA_CATALOG": given}).catalog == Location(uri)


@pytest.mark.parametrize("given", ["gs://bucket/lake", "s3://", "hdfs://namenode/lake"])
def test_unsupported_locations_are_named(given: str):
    with pytest.raises(ValueError, match="location"):
        load_config({"lake": given}, environ={})


def test_xash_scheme_is_read_and_checked(tmp_path: Path):
    assert load_config(environ={}).joinsearch.xash_scheme == "authors"
    config_file = tmp_path / "lakemeta.yaml"
    config_file.write_text("joinsearch:\n  xash_scheme: eq5\n")
    assert load_config(environ={"LAKEMETA_CONFIG": str(config_file)}).joinsearch.xash_scheme == "eq5"
    config_file.write_text("joinsearch:\n  xash_scheme: murmur\n")
    with pytest.raises(ValueError, match="xash_scheme"):
        load_config(environ={"LAKEMETA_CONFIG": str(config_file)})


def test_a_tables_schema_is_its_folder_unless_a_pattern_maps_it():
    config = load_config(
        {"fks": parse_settings(['fks.schemas={"flat/shop_*": shop, "erp_2019/*": erp}'])["fks"]}, environ={}
    )
    schema_of = config.fks.schema_of
    assert schema_of("flat/shop_orders") == "shop" and schema_of("flat/hr_staff") == "flat"
    assert schema_of("erp_2019/invoices") == schema_of("erp/invoices") == "erp"
    assert schema_of("orders") == "" and schema_of("a/b/c") == "a/b"  # the lake's root; a folder's path
    with pytest.raises(ValueError, match=r"fks\.schemas"):
        load_config({"fks": {"schemas": {"flat/*": ""}}}, environ={})
