"""What the names of a foreign-key candidate F -> P say, in any naming style and language: the features
``model`` weighs beside the values' signals.

Names carry most of what a person uses to find a foreign key: ``bestellungen.kunden_id`` refers to
``kunden.kunden_id``, ``Orders.CustomerId`` to ``Customers.Id``, TPC-H's ``l_orderkey`` to
``o_orderkey``. Zhang et al. §5.4 compare names by identity after deleting table prefixes; real schemas
need more (Rostin et al. 2009 and HoPF, Jiang & Naumann 2020, weigh name features beside value features):

* **Tokens** (``tokens``): a name is split at separators, digits and case changes *before* case is folded
  (``SalesRepId`` -> sales, rep, id; ``HTMLParser`` -> html, parser), and before an identifier word ending
  a compound (``kundennummer`` -> kunden, nummer), letters being Unicode letters
  (``schüler_id`` -> schüler, id); tokens are folded to lower case without accents (``schüler`` ->
  schuler, ``größe`` -> grosse, ``café`` -> cafe), so that a German plural's umlaut (``Land``,
  ``Länder``) keeps the word.
* **Table prefixes** (``bare_tokens``): a first token that abbreviates the column's table (1-3 letters
  found in order in the table's name: TPC-H's ``l_`` of lineitem, ``ps_`` of partsupp, TPC-DS's ``cd_``
  of customer_demographics) is a table prefix and is dropped; a word (``kunden_`` of ``kunden_id``) is
  not a prefix, which is what the old ``^[A-Za-z]+_`` rule got wrong.
* **Word forms** (``same_word``): singular and plural, in English and German, match by their stem: a
  common beginning of at least four letters, the rest at most three letters longer on one side and one on
  the other (kunde/kunden, produkt/produkte, category/categories, konto/konten). A compound names its last
  part (``in_compound``: ``gastgeberstadt`` is a stadt, ``produktmenge`` no produkt).
* **Generic tokens** (``GENERIC``): ``id``, ``key``, ``code``, ``nr``, ``no``, ``sk``, ... say a column
  is an identifier, not what it identifies.

The features of a candidate (``name_columns``), each over the pairs of F's and P's columns:

* ``name_equal``: the two names are the same, whole or without their table prefixes;
* ``name_similarity``: the share of P's name tokens, generic ones left out, that F's tokens match (a key
  named by generic tokens alone, ``id``, is represented by its table's name tokens: ``customer_id`` ->
  ``customers.id``);
* ``names_key_table``: F's name holds the name of P's table or its singular (``kunden_id`` -> kunden,
  ``CustomerId`` -> Customers), the way most references are named;
* ``fk_identifier``: F's name ends in a generic token or holds one (``kunden_id``, ``auftragsnummer``):
  a column named as an identifier, where quantities and measures are not;
* ``key_names_own_table``, ``fk_names_own_table``: P's (F's) name holds its own table's name
  (``kunden.kunden_id``): a table's own identifier, where a column named after another table
  (``girokonto.kunden_id``) is a reference itself, whichever way the values nest;
* ``fk_table_extends_key_table``, ``key_table_extends_fk_table``: one table's name holds the other's and
  more (``girokonto`` and ``konten``, ``film_kategorie`` and ``film``): the detail references the whole,
  which tells the direction of a one-to-one pair whose values nest both ways.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import shared_codes

GENERIC = frozenset(
    {"id", "ids", "key", "sk", "pk", "fk", "no", "nr", "num", "number", "nummer", "code", "kennung", "ref"}
)
"""Tokens that say a column is an identifier, not what it identifies (English and German)."""
_COMPOUND_IDENTIFIERS = ("nummer", "number", "code", "kennung", "schlussel")
_IDENTIFIER_ENDINGS = ("id", "nummer", "nr", "code", "key", "schlussel", "kennung")
_SPELLED_OUT = str.maketrans({"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe"})
_RUNS = re.compile(r"[^\W\d_]+|\d+")  # letters in any script; digits
_MIN_STEM = 4  # letters two word forms share at least ("kund" of kunde / kunden)
_MAX_ENDING = 3  # letters a plural adds at most beyond the stem ("ies" of categories)
_MIN_CONTAINED = 3  # a token matches one containing it only from this length on ("sk" is in "desk")
_PAIRS = 1 << 16  # pairs of names kept: names are few (O(columns)), their pairs many (O(candidates))
_MAX_PREFIX = 3  # letters of a table prefix at most (TPC-DS's "inv_")


def _fold(token: str) -> str:
    """A token in lower case without accents (umlauts become their vowel: a plural's umlaut, ``Land`` and
    ``Länder``, stays the same word), ``ß`` spelled ``ss``."""
    spelled = token.lower().translate(_SPELLED_OUT)
    return "".join(c for c in unicodedata.normalize("NFKD", spelled) if not unicodedata.combining(c))


def _split_case(word: str) -> list[str]:
    """A run of letters split where its case changes: before an upper-case letter after a lower-case one,
    and before the last of several upper-case letters followed by a lower-case one (``HTMLParser``)."""
    parts, start = [], 0
    for i in range(1, len(word)):
        before, here = word[i - 1], word[i]
        after = word[i + 1] if i + 1 < len(word) else ""
        if here.isupper() and (before.islower() or (before.isupper() and after.islower())):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def _split_identifier(token: str) -> list[str]:
    """A compound ending in an identifier word split before it (``kundennummer`` -> kunden, nummer;
    ``landercode`` -> lander, code): its first part names what it identifies."""
    for ending in _COMPOUND_IDENTIFIERS:
        if token.endswith(ending) and len(token) - len(ending) >= _MIN_CONTAINED:
            return [token[: -len(ending)], ending]
    return [token]


@cache
def tokens(name: str) -> tuple[str, ...]:
    """A name's folded tokens: runs of letters (split at case changes) and runs of digits, folded, and
    compounds ending in an identifier word split before it."""
    parts = [
        part for run in _RUNS.findall(name) for part in (_split_case(run) if run[0].isalpha() else [run])
    ]
    return tuple(token for part in parts for token in _split_identifier(_fold(part)))


def _abbreviates(token: str, table: str) -> bool:
    """Whether a token's letters occur in order in a table's name, starting with its first letter."""
    name = "".join(_table_words(table))
    if not name or token[0] != name[0] or token == name:
        return False
    at = 0
    for letter in token:
        at = name.find(letter, at) + 1
        if not at:
            return False
    return True


@cache
def bare_tokens(column: str, table: str) -> tuple[str, ...]:
    """A column's tokens without a table prefix (module docstring)."""
    found = tokens(column)
    if (
        len(found) > 1
        and found[0].isalpha()
        and len(found[0]) <= _MAX_PREFIX
        and _abbreviates(found[0], table)
    ):
        return found[1:]
    return found


@lru_cache(maxsize=_PAIRS)
def same_word(token: str, other: str) -> bool:
    """Whether two tokens are one word, or two forms of it (singular and plural)."""
    if token == other:
        return True
    common = 0
    for a, b in zip(token, other, strict=False):
        if a != b:
            break
        common += 1
    shorter, longer = sorted((len(token), len(other)))
    return common >= _MIN_STEM and longer - common <= _MAX_ENDING and shorter - common <= 1


@lru_cache(maxsize=_PAIRS)
def in_compound(token: str, word: str) -> bool:
    """Whether a token is a word, or a compound ending with one of its forms: a compound names its last
    part (German: ``gastgeberstadt`` is a stadt, ``verkaufstransaktion`` a transaktion; a
    ``produktmenge`` is a quantity, not a product)."""
    return same_word(token, word) or any(
        same_word(token[cut:], word) for cut in range(_MIN_STEM, len(token) - _MIN_STEM + 1)
    )


def _matches(token: str, other: str) -> bool:
    """Whether two tokens name one thing: one word, a compound of it, or one contains the other
    (``addr``, ``address``)."""
    if in_compound(token, other) or in_compound(other, token):
        return True
    shorter, longer = sorted((token, other), key=len)
    return len(shorter) >= _MIN_CONTAINED and shorter in longer


@cache
def _table_words(table: str) -> tuple[str, ...]:
    """The tokens of a table's name (the last part of its path)."""
    return tokens(table.rsplit("/", 1)[-1])


def _similarity(fk: tuple[str, ...], pk: tuple[str, ...], pk_words: tuple[str, ...]) -> float:
    wanted = [token for token in pk if token not in GENERIC] or pk_words
    if not wanted:
        return 0.0
    return sum(any(_matches(w, present) for present in fk) for w in wanted) / len(wanted)


def _holds_words(fk: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether the tokens hold the words in order, each as itself, another form of it or a part of a
    compound, or the words written as one token (``kundenkonto_id`` holds kunden, konto)."""
    if not words or words[0][:_MIN_STEM] not in " ".join(fk):
        # a token holding the first word, a form of it or the words joined holds its first letters
        return False
    joined = "".join(words)
    if len(joined) >= _MIN_STEM and any(in_compound(token, joined) for token in fk):
        return True
    at = 0
    for word in words:
        while at < len(fk) and not in_compound(fk[at], word):
            at += 1
        if at == len(fk):
            return False
        at += 1
    return True


def _extends(words: tuple[str, ...], others: tuple[str, ...]) -> bool:
    """Whether a table's name (its ``words``) holds another table's name and more (``girokonto`` and
    ``konten``, ``film_kategorie`` and ``film``): a detail of the other, which references it rather than
    the reverse."""
    return words != others and "".join(words) != "".join(others) and _holds_words(words, others)


class _Interned:
    """Token tuples as integers, equal tuples equal integers."""

    def __init__(self) -> None:
        self.codes: dict[tuple[str, ...], int] = {}
        self.values: list[tuple[str, ...]] = []

    def __call__(self, value: tuple[str, ...]) -> int:
        code = self.codes.setdefault(value, len(self.codes))
        if code == len(self.values):
            self.values.append(value)
        return code


def _per_distinct(function: Callable[..., object], *codes: np.ndarray) -> np.ndarray:
    """``function`` of each row's codes (non-negative, or -1), called once per distinct combination."""
    if not len(codes[0]):
        return np.zeros(0)
    base = max(int(c.max()) for c in codes) + 2
    combined = np.zeros(len(codes[0]), np.int64)
    for c in codes:  # at most three codes of a few thousand names: within 64 bits
        combined = combined * base + (c + 1)
    distinct, inverse = np.unique(combined, return_inverse=True)
    parts = []
    for _ in codes:
        parts.append(distinct % base - 1)
        distinct = distinct // base
    rows = zip(*(part.tolist() for part in reversed(parts)), strict=True)
    return np.array([function(*row) for row in rows], dtype=np.float64)[inverse]


def name_columns(candidates: pa.Table) -> dict[str, np.ndarray]:
    """The name features (module docstring) of each candidate (fk_table, fk_columns, pk_table, pk_columns),
    an array each; for several columns, each column pair's, all of them (``name_equal``,
    ``names_key_table``, ``fk_identifier``), any (``key_names_own_table``, ``fk_names_own_table``) or
    their mean (``name_similarity``). A lake's
    candidates are millions, its names few: each column's tokens are found once, and each feature is
    computed once per distinct combination of the token tuples it reads."""
    n = candidates.num_rows
    fk_columns, pk_columns = candidates["fk_columns"], candidates["pk_columns"]
    owner = pc.list_parent_indices(fk_columns).to_numpy()
    interned = _Interned()

    def sides(tables: pa.ChunkedArray, columns: pa.ChunkedArray) -> tuple[np.ndarray, ...]:
        """Per column pair, of one side's column: its whole tokens, its bare tokens and its table's words,
        as interned codes."""
        keys = pc.binary_join_element_wise(tables.take(owner), pc.list_flatten(columns), "\x1f")
        [codes], distinct = shared_codes(keys)
        found = []
        for key in distinct.to_pylist():
            table, column = key.split("\x1f")
            found.append(
                (
                    interned(tokens(column)),
                    interned(bare_tokens(column, table)),
                    interned(_table_words(table)),
                )
            )
        per_side = np.array(found, dtype=np.int64).reshape(len(found), 3)[codes]
        return per_side[:, 0], per_side[:, 1], per_side[:, 2]

    fk_whole, fk_bare, fk_words = sides(candidates["fk_table"], fk_columns)
    pk_whole, pk_bare, pk_words = sides(candidates["pk_table"], pk_columns)
    value = interned.values
    generic_only = np.array([not [t for t in v if t not in GENERIC] for v in value], dtype=bool)
    equal = (
        np.array([bool(v) for v in value], dtype=bool)[fk_whole]
        & ((fk_whole == pk_whole) | (fk_bare == pk_bare))
    ).astype(np.float64)
    # a key of generic tokens alone is represented by its table's words
    similarity = _per_distinct(
        lambda fk, pk, words: _similarity(value[fk], value[pk], value[words] if words >= 0 else ()),
        fk_bare,
        pk_bare,
        np.where(generic_only[pk_bare], pk_words, -1),
    )
    identifier = np.array(
        [any(t in GENERIC or t.endswith(_IDENTIFIER_ENDINGS) for t in v) for v in value], dtype=np.float64
    )[fk_bare]

    def holds(tokens_: np.ndarray, words: np.ndarray) -> np.ndarray:
        return _per_distinct(lambda t, w: _holds_words(value[t], value[w]), tokens_, words)

    count = np.bincount(owner, minlength=n)

    def every(per_pair: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=1.0 - per_pair, minlength=n) == 0

    def some(per_pair: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=per_pair, minlength=n) > 0

    # the tables' words, a candidate's (its first column pair's: one table per side)
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else np.zeros(0, np.int64)
    fk_table_words, pk_table_words = np.zeros(n, np.int64), np.zeros(n, np.int64)
    fk_table_words[owner[first]], pk_table_words[owner[first]] = fk_words[first], pk_words[first]
    summed = np.bincount(owner, weights=similarity, minlength=n)
    return {
        "name_equal": every(equal),
        "name_similarity": np.divide(summed, count, out=np.zeros(n), where=count > 0),
        "names_key_table": every(holds(fk_bare, pk_words)),
        "fk_identifier": every(identifier),
        "key_names_own_table": some(holds(pk_bare, pk_words)),
        "fk_names_own_table": some(holds(fk_bare, fk_words)),
        "fk_table_extends_key_table": _per_distinct(
            lambda a, b: _extends(value[a], value[b]), fk_table_words, pk_table_words
        ).astype(bool),
        "key_table_extends_fk_table": _per_distinct(
            lambda a, b: _extends(value[b], value[a]), fk_table_words, pk_table_words
        ).astype(bool),
    }
