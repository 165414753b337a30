"""A generator of small web-table-like CSV files over shared vocabularies.

Web tables are small (a dozen rows, a few columns) and many of them draw their values from the same
vocabularies (countries, planets, cities, ...), which is what makes inclusion dependencies and joins
among them exist. Rows are drawn with Zipf-like frequencies so that popular values recur across tables.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

# (country, capital, continent, currency)
COUNTRIES = [
    ("France", "Paris", "Europe", "EUR"),
    ("Germany", "Berlin", "Europe", "EUR"),
    ("Italy", "Rome", "Europe", "EUR"),
    ("Spain", "Madrid", "Europe", "EUR"),
    ("Portugal", "Lisbon", "Europe", "EUR"),
    ("Netherlands", "Amsterdam", "Europe", "EUR"),
    ("Belgium", "Brussels", "Europe", "EUR"),
    ("Austria", "Vienna", "Europe", "EUR"),
    ("Poland", "Warsaw", "Europe", "PLN"),
    ("Sweden", "Stockholm", "Europe", "SEK"),
    ("Norway", "Oslo", "Europe", "NOK"),
    ("Denmark", "Copenhagen", "Europe", "DKK"),
    ("Finland", "Helsinki", "Europe", "EUR"),
    ("Greece", "Athens", "Europe", "EUR"),
    ("Ireland", "Dublin", "Europe", "EUR"),
    ("United Kingdom", "London", "Europe", "GBP"),
    ("United States", "Washington", "North America", "USD"),
    ("Canada", "Ottawa", "North America", "CAD"),
    ("Mexico", "Mexico City", "North America", "MXN"),
    ("Brazil", "Brasilia", "South America", "BRL"),
    ("Argentina", "Buenos Aires", "South America", "ARS"),
    ("Chile", "Santiago", "South America", "CLP"),
    ("Peru", "Lima", "South America", "PEN"),
    ("Colombia", "Bogota", "South America", "COP"),
    ("Japan", "Tokyo", "Asia", "JPY"),
    ("China", "Beijing", "Asia", "CNY"),
    ("India", "New Delhi", "Asia", "INR"),
    ("South Korea", "Seoul", "Asia", "KRW"),
    ("Indonesia", "Jakarta", "Asia", "IDR"),
    ("Thailand", "Bangkok", "Asia", "THB"),
    ("Vietnam", "Hanoi", "Asia", "VND"),
    ("Egypt", "Cairo", "Africa", "EGP"),
    ("Nigeria", "Abuja", "Africa", "NGN"),
    ("Kenya", "Nairobi", "Africa", "KES"),
    ("South Africa", "Pretoria", "Africa", "ZAR"),
    ("Morocco", "Rabat", "Africa", "MAD"),
    ("Australia", "Canberra", "Oceania", "AUD"),
    ("New Zealand", "Wellington", "Oceania", "NZD"),
]
# (planet, kind, moons, order from the sun)
PLANETS = [
    ("Mercury", "terrestrial", 0, 1),
    ("Venus", "terrestrial", 0, 2),
    ("Earth", "terrestrial", 1, 3),
    ("Mars", "terrestrial", 2, 4),
    ("Jupiter", "gas giant", 95, 5),
    ("Saturn", "gas giant", 146, 6),
    ("Uranus", "ice giant", 28, 7),
    ("Neptune", "ice giant", 16, 8),
]
# (city, country)
CITIES = [
    ("Lyon", "France"),
    ("Marseille", "France"),
    ("Hamburg", "Germany"),
    ("Munich", "Germany"),
    ("Milan", "Italy"),
    ("Naples", "Italy"),
    ("Barcelona", "Spain"),
    ("Seville", "Spain"),
    ("Porto", "Portugal"),
    ("Rotterdam", "Netherlands"),
    ("Antwerp", "Belgium"),
    ("Graz", "Austria"),
    ("Krakow", "Poland"),
    ("Gothenburg", "Sweden"),
    ("Bergen", "Norway"),
    ("Aarhus", "Denmark"),
    ("Manchester", "United Kingdom"),
    ("Edinburgh", "United Kingdom"),
    ("New York", "United States"),
    ("Chicago", "United States"),
    ("Toronto", "Canada"),
    ("Vancouver", "Canada"),
    ("Osaka", "Japan"),
    ("Shanghai", "China"),
    ("Mumbai", "India"),
    ("Busan", "South Korea"),
    ("Sydney", "Australia"),
    ("Melbourne", "Australia"),
    ("Auckland", "New Zealand"),
    ("Lagos", "Nigeria"),
    ("Cape Town", "South Africa"),
    ("Casablanca", "Morocco"),
    ("Sao Paulo", "Brazil"),
    ("Cordoba", "Argentina"),
    ("Medellin", "Colombia"),
]
LANGUAGES = [
    "English",
    "Spanish",
    "French",
    "German",
    "Italian",
    "Portuguese",
    "Dutch",
    "Polish",
    "Swedish",
    "Japanese",
    "Chinese",
    "Hindi",
    "Korean",
    "Arabic",
    "Swahili",
    "Greek",
    "Finnish",
    "Danish",
]


def _zipf_choice(rng: np.random.Generator, size: int, count: int, exponent: float = 1.1) -> np.ndarray:
    """``count`` distinct indices into a vocabulary of ``size``, popular (low) indices more likely."""
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return rng.choice(size, size=min(count, size), replace=False, p=weights / weights.sum())


def _countries(rng: np.random.Generator, rows: int) -> tuple[list[str], list[list[object]]]:
    picked = [COUNTRIES[i] for i in _zipf_choice(rng, len(COUNTRIES), rows)]
    layout = rng.choice(["capital", "continent", "currency", "population"], size=2, replace=False)
    columns = ["country", *layout]
    data = []
    for country, capital, continent, currency in picked:
        values = {
            "capital": capital,
            "continent": continent,
            "currency": currency,
            "population": int(rng.integers(1, 1400)) * 1_000_000,
        }
        data.append([country, *(values[c] for c in layout)])
    return columns, data


def _planets(rng: np.random.Generator, rows: int) -> tuple[list[str], list[list[object]]]:
    picked = sorted(_zipf_choice(rng, len(PLANETS), rows, exponent=0.3))
    columns = ["planet", "type", "moons", "position"]
    return columns, [list(PLANETS[i]) for i in picked]


def _cities(rng: np.random.Generator, rows: int) -> tuple[list[str], list[list[object]]]:
    picked = [CITIES[i] for i in _zipf_choice(rng, len(CITIES), rows)]
    columns = ["city", "country", "founded"]
    return columns, [[city, country, int(rng.integers(100, 1900))] for city, country in picked]


def _languages(rng: np.random.Generator, rows: int) -> tuple[list[str], list[list[object]]]:
    picked = _zipf_choice(rng, len(COUNTRIES), rows)
    columns = ["country", "language", "speakers_millions"]
    data = [
        [
            COUNTRIES[i][0],
            LANGUAGES[int(rng.integers(len(LANGUAGES)))],
            round(float(rng.uniform(0.5, 300)), 1),
        ]
        for i in picked
    ]
    return columns, data


KINDS = {"countries": _countries, "planets": _planets, "cities": _cities, "languages": _languages}


def write_web_tables(folder: Path, count: int, seed: int = 7) -> list[Path]:
    """Write ``count`` small CSV tables into ``folder``; return their paths."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(KINDS)
    paths = []
    for index in range(count):
        kind = names[index % len(names)]
        columns, rows = KINDS[kind](rng, int(rng.integers(8, 16)))
        path = folder / f"{kind}_{index:04d}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            writer.writerows(rows)
        paths.append(path)
    return paths
