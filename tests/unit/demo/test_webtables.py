import csv
from pathlib import Path

from lakemeta.demo.webtables import COUNTRIES, write_web_tables


def test_web_tables_are_small_deterministic_and_share_vocabularies(tmp_path: Path):
    first = write_web_tables(tmp_path / "a", 40, seed=3)
    second = write_web_tables(tmp_path / "b", 40, seed=3)
    assert [p.read_text() for p in first] == [p.read_text() for p in second]
    countries = {c[0] for c in COUNTRIES}
    tables_with_countries = 0
    for path in first:
        rows = list(csv.reader(path.open()))
        header, body = rows[0], rows[1:]
        assert 2 <= len(header) <= 4 and 8 <= len(body) <= 15
        assert all(len(row) == len(header) for row in body)
        if "country" in header:
            column = header.index("country")
            assert {row[column] for row in body} <= countries
            tables_with_countries += 1
    assert tables_with_countries >= 20  # shared vocabulary across many tables: INDs exist among them
