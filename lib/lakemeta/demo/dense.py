"""A seeded generator of a dense lake: many small statistics datasets, the kind R and Python packages ship
(``datasets``, ``MASS``, ``carData``, ``statsmodels``...), as Delta tables written by delta-rs.

Web tables share a few vocabularies; statistics datasets share far more. Every table's row ids are 1..n,
years fall in overlapping windows, counts are small integers, codes are 1..k, factors come from a handful
of small vocabularies (sex, regions, ISO codes, months). So most pairs of columns share a value and many
are included in one another: a lake that stresses the pairwise discovery steps (inclusion estimates, INDs,
FK candidates) rather than the per-table state. Table ``i`` depends on the seed and ``i`` only, so a
smaller lake is a prefix of a larger one with the same seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

from lakemeta.lake.tables import discover_tables
from lakemeta.storage import Location

MAX_ROWS = 2000
MIN_COLUMNS, MAX_COLUMNS = 2, 12
# Unequal package sizes, as in Rdatasets: a few packages ship most datasets.
PACKAGES = [
    "datasets", "MASS", "carData", "AER", "Ecdat", "HSAUR3", "boot", "survival", "vcd", "ggplot2",
    "lme4", "nlme", "openintro", "Stat2Data", "wooldridge", "faraway", "HistData", "COUNT", "robustbase",
    "KMsurv", "mosaicData", "DAAG", "psych", "plm", "gapminder", "palmerpenguins", "statsmodels",
    "seaborn", "pydataset", "vega_datasets",
]  # fmt: skip
DATASETS = [
    "iris", "mtcars", "airquality", "crabs", "survey", "births", "trial", "panel", "wages", "cars",
    "trees", "women", "faithful", "chickwts", "warpbreaks", "esoph", "infert", "sleep", "quakes", "rock",
    "pressure", "orange", "cabbages", "housing", "schools", "smoking", "voting", "fertility", "deaths",
    "accidents", "earnings", "diet", "heights", "salaries", "doctor_visits", "fish", "insects", "rats",
    "penguins", "titanic", "tips", "flights", "diamonds", "exams", "cholesterol", "leukemia", "melanoma",
    "kidney", "lung", "heart", "crime", "elections", "unemployment", "inflation", "consumption",
    "investment", "prices", "harvest", "rainfall", "ozone",
]  # fmt: skip

# Column kinds other than the leading id, with how often a column is of each.
KINDS = {
    "count": 0.20,
    "decimal": 0.24,
    "code": 0.12,
    "factor": 0.20,
    "year": 0.10,
    "subject": 0.06,
    "integer": 0.08,
}
ID_SHARE = 0.65  # tables whose first column is a row id 1..n
NULL_SHARE = 0.05  # columns (not ids) with a few nulls

ID_NAMES = ["id", "ID", "row", "obs", "Obs", "X", "rownames", "index", "case", "record_id"]
# Multi-word names are styled per table (snake_case, camelCase, PascalCase, R's dotted, run together).
NAMES: dict[str, list[tuple[str, ...]]] = {
    "year": [("year",), ("birth", "year"), ("survey", "year"), ("yr",), ("period",), ("season", "year")],
    "count": [
        ("count",), ("n",), ("deaths",), ("cases",), ("births",), ("events",), ("visits",), ("children",),
        ("accidents",), ("claims",), ("freq",), ("num", "trials"), ("n", "obs"), ("admissions",),
        ("recurrences",), ("eggs",), ("fish", "caught"), ("days", "absent"), ("doctor", "visits"),
        ("arrests",),
    ],
    "decimal": [
        ("sepal", "length"), ("sepal", "width"), ("petal", "length"), ("petal", "width"), ("body", "mass"),
        ("weight",), ("height",), ("income",), ("price",), ("temperature",), ("dose",), ("score",),
        ("rate",), ("ratio",), ("pressure",), ("yield",), ("speed",), ("distance",),
        ("gdp", "per", "capita"), ("life", "expectancy"), ("wage",), ("bmi",), ("length",), ("depth",),
        ("area",), ("density",), ("concentration",), ("expenditure",), ("consumption",),
    ],
    "code": [
        ("group",), ("type",), ("class",), ("grade",), ("level",), ("stage",), ("category",), ("block",),
        ("batch",), ("site",), ("wave",), ("dept",), ("cyl",), ("gear",), ("carb",), ("rank",),
    ],
    "subject": [
        ("subject",), ("patient", "id"), ("household", "id"), ("family",), ("cluster",), ("unit",),
        ("plot",), ("school",), ("person",), ("firm", "id"),
    ],
    "integer": [
        ("age",), ("score",), ("points",), ("duration",), ("floor",), ("rooms",), ("education", "years"),
        ("hours",), ("minutes",), ("grade", "points"),
    ],
}  # fmt: skip


def _words(text: str) -> list[str]:
    return text.split()


_ISO3 = _words(
    "USA GBR FRA DEU ITA ESP CAN MEX BRA ARG JPN CHN IND KOR AUS NZL ZAF NGA EGY KEN SWE NOR DNK FIN NLD "
    "BEL AUT CHE POL PRT GRC IRL TUR RUS IDN THA VNM PHL CHL PER"
)
_ISO2 = _words(
    "US GB FR DE IT ES CA MX BR AR JP CN IN KR AU NZ ZA NG EG KE SE NO DK FI NL BE AT CH PL PT GR IE"
)
_STATES = _words("CA TX NY FL IL PA OH GA NC MI NJ VA WA AZ MA TN IN MO MD WI CO MN SC AL LA KY OR OK CT UT")
_MONTHS = _words("January February March April May June July August September October November December")
_WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
# name: (column names, variants of the vocabulary: a table uses one)
VOCABULARIES: dict[str, tuple[list[tuple[str, ...]], list[list[str]]]] = {
    "sex": (
        [("sex",), ("gender",)],
        [["male", "female"], ["M", "F"], ["Male", "Female"], ["m", "f"]],
    ),
    "region": (
        [("region",), ("area",), ("zone",)],
        [
            ["North", "South", "East", "West", "Central"],
            ["Northeast", "Midwest", "South", "West"],
            ["Northwest", "Southwest", "Northeast", "Southeast", "Central", "Highlands", "Coast"],
        ],
    ),
    "country": ([("country",), ("iso3",), ("country", "code")], [_ISO3]),
    "country2": ([("iso2",), ("cc",), ("nation",)], [_ISO2]),
    "state": ([("state",), ("st",)], [_STATES]),
    "treatment": (
        [("treatment",), ("trt",), ("arm",), ("condition",)],
        [
            ["control", "treatment"],
            ["placebo", "drug"],
            ["control", "low", "medium", "high"],
            ["ctrl", "trt1", "trt2"],
            ["A", "B", "C", "D"],
        ],
    ),
    "month": ([("month",), ("mon",)], [_MONTHS, [m[:3] for m in _MONTHS]]),
    "weekday": ([("weekday",), ("day",), ("dow",)], [_WEEKDAYS, [d[:3] for d in _WEEKDAYS]]),
    "yesno": (
        [("smoker",), ("married",), ("employed",), ("urban",), ("treated",), ("union",)],
        [["yes", "no"], ["Yes", "No"], ["Y", "N"], ["TRUE", "FALSE"]],
    ),
    "education": (
        [("education",), ("educ",), ("degree",)],
        [["none", "primary", "secondary", "college", "graduate"], ["HS", "BA", "MA", "PhD"]],
    ),
    "season": (
        [("season",)],
        [["spring", "summer", "autumn", "winter"], ["Spring", "Summer", "Fall", "Winter"]],
    ),
    "status": ([("status",), ("outcome",)], [["alive", "dead"], ["alive", "dead", "censored"], ["0", "1"]]),
}
_VOCABULARY_WEIGHTS = np.array([3, 2, 2, 1, 1, 3, 2, 1, 3, 1, 1, 2], dtype=float)
_PACKAGE_SHARES = 1.0 / np.arange(1, len(PACKAGES) + 1)
_PACKAGE_SHARES /= _PACKAGE_SHARES.sum()
_LETTERS = np.array(list("ABCDEFGHIJKL"))
_STYLES = ["snake", "camel", "pascal", "dotted", "dotted_lower", "flat"]
_STYLE_WEIGHTS = np.array([0.35, 0.15, 0.15, 0.1, 0.1, 0.15])


def _styled(words: Sequence[str], style: str) -> str:
    if style == "snake":
        return "_".join(words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "dotted":
        return ".".join(w.capitalize() for w in words)
    if style == "dotted_lower":
        return ".".join(words)
    return "".join(words)


def _row_count(rng: np.random.Generator) -> int:
    """Log-normal around 100: most tables 20-500 rows, a few tiny ones, a few up to MAX_ROWS."""
    return int(np.clip(round(np.exp(rng.normal(np.log(100), 1.0))), 1, MAX_ROWS))


def _weights(rng: np.random.Generator, k: int) -> np.ndarray:
    """Uneven shares of k values, as categories in real data have."""
    return rng.dirichlet(np.full(k, 2.0))


def _nulls(rng: np.random.Generator, n: int) -> np.ndarray | None:
    if n < 5 or rng.random() >= NULL_SHARE:
        return None
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, max(1, round(n * rng.uniform(0.01, 0.1))), replace=False)] = True
    return mask


def _strings(values: Sequence[str], indices: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    """Strings of a vocabulary by index, built in Arrow (no Python object per row)."""
    dictionary = pa.array(list(values), pa.string())
    codes = pa.array(indices.astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(codes, dictionary).cast(pa.string())


def _column(kind: str, rng: np.random.Generator, n: int) -> tuple[tuple[str, ...], pa.Array]:
    """A column of ``kind`` with ``n`` rows: its name's words and its values."""
    mask = _nulls(rng, n)
    if kind == "factor":
        which = rng.choice(len(VOCABULARIES), p=_VOCABULARY_WEIGHTS / _VOCABULARY_WEIGHTS.sum())
        names, variants = list(VOCABULARIES.values())[which]
        vocabulary = variants[rng.integers(len(variants))]
        if len(vocabulary) > 4:  # a subset, popular values (listed first) more likely
            popularity = 1.0 / np.arange(1, len(vocabulary) + 1)
            size = int(rng.integers(2, len(vocabulary) + 1))
            kept = rng.choice(len(vocabulary), size, replace=False, p=popularity / popularity.sum())
            vocabulary = [vocabulary[i] for i in np.sort(kept)]
        indices = rng.choice(len(vocabulary), n, p=_weights(rng, len(vocabulary)))
        return names[rng.integers(len(names))], _strings(vocabulary, indices, mask)
    words = NAMES[kind][rng.integers(len(NAMES[kind]))]
    if kind == "year":
        width = int(rng.integers(3, 61))
        start = int(rng.integers(1900, 2026 - width + 1))
        values = rng.integers(start, start + width, n)
        if rng.random() < 0.5:  # a time series or a panel, in order
            values = np.sort(values)
    elif kind == "count":
        lam = float(np.clip(np.exp(rng.normal(np.log(3), 1.0)), 0.1, 200))
        if rng.random() < 0.7:
            values = rng.poisson(lam, n)
        else:  # overdispersed
            r = rng.uniform(0.5, 5)
            values = rng.negative_binomial(r, r / (r + lam), n)
    elif kind == "code":
        k = int(rng.integers(2, 13))
        indices = rng.choice(k, n, p=_weights(rng, k))
        if rng.random() < 0.3:
            return words, _strings(list(_LETTERS[:k]), indices, mask)
        values = indices + 1
    elif kind == "subject":  # repeated measures: a few rows per subject 1..m
        m = int(rng.integers(2, max(3, n // 2 + 1)))
        values = rng.integers(1, m + 1, n)
        if rng.random() < 0.5:
            values = np.sort(values)
    elif kind == "integer":
        low = int(rng.choice([0, 1, 10, 18, 20, 50, 100]))
        values = rng.integers(low, low + int(rng.integers(5, 101)) + 1, n)
    elif kind == "decimal":
        mean = float(np.exp(rng.normal(np.log(20), 1.5)))
        values = rng.normal(mean, mean * rng.uniform(0.05, 0.4), n)
        if rng.random() < 0.8:
            values = np.abs(values)
        decimals = 1 if mean > 100 else int(rng.choice([1, 2], p=[0.6, 0.4]))
        return words, pa.array(np.round(values, decimals), pa.float64(), mask=mask)
    else:
        raise ValueError(f"unknown column kind {kind!r}")
    return words, pa.array(values.astype(np.int64), pa.int64(), mask=mask)


def _unique_name(name: str, taken: set[str]) -> str:
    """``name``, or it with a number, so that no two columns of a table differ only in case (Spark resolves
    column names case-insensitively)."""
    candidate, number = name, 2
    while candidate.lower() in taken:
        candidate, number = f"{name}{number}", number + 1
    taken.add(candidate.lower())
    return candidate


def dense_table(index: int, seed: int = 0) -> tuple[str, pa.Table]:
    """Table ``index`` of the dense lake of ``seed``: its name (``stats/<package>/<dataset>_<index>``) and
    its rows. It depends on ``seed`` and ``index`` only."""
    rng = np.random.default_rng([seed, index])
    package = PACKAGES[rng.choice(len(PACKAGES), p=_PACKAGE_SHARES)]
    name = f"stats/{package}/{DATASETS[rng.integers(len(DATASETS))]}_{index:05d}"
    n = _row_count(rng)
    n_columns = int(np.clip(2 + rng.poisson(3.5), MIN_COLUMNS, MAX_COLUMNS))
    style = _STYLES[rng.choice(len(_STYLES), p=_STYLE_WEIGHTS)]
    taken: set[str] = set()
    names, arrays = [], []
    if rng.random() < ID_SHARE:
        names.append(_unique_name(ID_NAMES[rng.integers(len(ID_NAMES))], taken))
        arrays.append(pa.array(np.arange(1, n + 1, dtype=np.int64)))
    kinds = list(KINDS)
    shares = np.array(list(KINDS.values()))
    for kind in rng.choice(kinds, n_columns - len(arrays), p=shares / shares.sum()):
        words, values = _column(str(kind), rng, n)
        column_style = style if rng.random() < 0.9 else _STYLES[rng.integers(len(_STYLES))]
        names.append(_unique_name(_styled(words, column_style), taken))
        arrays.append(values)
    return name, pa.table(arrays, names=names)


def dense_tables(n_tables: int, seed: int = 0) -> Iterator[tuple[str, pa.Table]]:
    """The tables of the dense lake of ``seed``, generated in memory, as ``write_dense_lake`` writes them."""
    for index in range(n_tables):
        yield dense_table(index, seed)


def write_dense_lake(lake: Path, n_tables: int, seed: int = 0) -> list[str]:
    """Write ``n_tables`` dense tables under ``lake`` (one Delta table each, written by delta-rs as another
    engine would); their names, relative to ``lake``. A table already there is an error."""
    names = []
    for name, rows in dense_tables(n_tables, seed):
        write_deltalake(str(lake / name), rows)
        names.append(name)
    return names


def _row_id(rows: pa.Table) -> str | None:
    """The table's row id column: the generator's, named so, unique and without nulls (no longer 1..n
    once rows were deleted, nor in order once appended to: a table's files come in any order)."""
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        plain = name in ID_NAMES and pa.types.is_int64(column.type) and not column.null_count
        if plain and len(pc.unique(column)) == len(column):
            return name
    return None


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def change_dense_tables(lake: Path, n_changed: int, seed: int) -> list[str]:
    """Change ``n_changed`` tables of the lake (picked by ``seed``), one new Delta version each, as another
    writer would: every other one gets 2-20% more rows, each column drawn from its own values (a row id
    continued), the others lose 5-30% of their rows (a DELETE on the row id where there is one, else an
    overwrite with the rows kept; at least one row stays). Returns the changed tables' names, sorted."""
    names = discover_tables(Location.parse(lake))
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(names), min(n_changed, len(names)), replace=False)
    for turn, index in enumerate(picked):
        path = str(lake / names[index])
        table = DeltaTable(path)
        rows = table.to_pyarrow_table()
        n = rows.num_rows
        row_id = _row_id(rows)
        if turn % 2 == 0 or n < 2:
            k = max(1, round(n * rng.uniform(0.02, 0.2)))
            appended = [column.take(pa.array(rng.integers(0, n, k))) for column in rows.columns]
            if row_id is not None:
                last = pc.max(rows[row_id]).as_py()
                appended[rows.column_names.index(row_id)] = pa.array(np.arange(last + 1, last + k + 1))
            write_deltalake(path, pa.table(appended, schema=rows.schema), mode="append")
            continue
        dropped = rng.choice(n, min(n - 1, max(1, round(n * rng.uniform(0.05, 0.3)))), replace=False)
        if row_id is not None:
            listed = ", ".join(str(i) for i in np.sort(rows[row_id].to_numpy()[dropped]))
            table.delete(f"{_quoted(row_id)} IN ({listed})")
        else:
            kept = np.setdiff1d(np.arange(n), dropped)
            write_deltalake(path, rows.take(pa.array(kept)), mode="overwrite")
    return sorted(names[i] for i in picked)
