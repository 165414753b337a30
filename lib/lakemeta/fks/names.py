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

The features of a candidate (``name_features``), each over the pairs of F's and P's columns:

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
from dataclasses import dataclass
from functools import cache, lru_cache

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


@dataclass(frozen=True)
class NameFeatures:
    """The name features of one candidate (module docstring)."""

    name_equal: bool
    name_similarity: float
    names_key_table: bool
    fk_identifier: bool
    key_names_own_table: bool
    fk_names_own_table: bool
    fk_table_extends_key_table: bool
    key_table_extends_fk_table: bool


@lru_cache(maxsize=_PAIRS)
def _similarity(fk: tuple[str, ...], pk: tuple[str, ...], pk_table: str) -> float:
    wanted = [token for token in pk if token not in GENERIC] or _table_words(pk_table)
    if not wanted:
        return 0.0
    return sum(any(_matches(w, present) for present in fk) for w in wanted) / len(wanted)


@lru_cache(maxsize=_PAIRS)
def _holds_words(fk: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether the tokens hold the words in order, each as itself, another form of it or a part of a
    compound, or the words written as one token (``kundenkonto_id`` holds kunden, konto)."""
    if not words:
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


@lru_cache(maxsize=_PAIRS)
def _extends(table: str, other: str) -> bool:
    """Whether a table's name holds another table's name and more (``girokonto`` and ``konten``,
    ``film_kategorie`` and ``film``): a detail of the other, which references it rather than the reverse."""
    words, others = _table_words(table), _table_words(other)
    return words != others and "".join(words) != "".join(others) and _holds_words(words, others)


def name_features(fk_table: str, fk_columns: list[str], pk_table: str, pk_columns: list[str]) -> NameFeatures:
    """The name features of the candidate ``fk_table.fk_columns`` -> ``pk_table.pk_columns``; for several
    columns, each column pair's, all of them (``name_equal``, ``names_key_table``,
    ``fk_identifier``) or their mean (``name_similarity``)."""
    equal, similarity, names_table, identifier, key_own, fk_own = [], [], [], [], [], []
    for fk_column, pk_column in zip(fk_columns, pk_columns, strict=True):
        fk_whole, pk_whole = tokens(fk_column), tokens(pk_column)
        fk, pk = bare_tokens(fk_column, fk_table), bare_tokens(pk_column, pk_table)
        equal.append(bool(fk_whole) and (fk_whole == pk_whole or fk == pk))
        similarity.append(_similarity(fk, pk, pk_table))
        names_table.append(_holds_words(fk, _table_words(pk_table)))
        identifier.append(any(t in GENERIC or t.endswith(_IDENTIFIER_ENDINGS) for t in fk))
        key_own.append(_holds_words(pk, _table_words(pk_table)))
        fk_own.append(_holds_words(fk, _table_words(fk_table)))
    return NameFeatures(
        name_equal=all(equal),
        name_similarity=sum(similarity) / len(similarity) if similarity else 0.0,
        names_key_table=all(names_table),
        fk_identifier=all(identifier),
        key_names_own_table=any(key_own),
        fk_names_own_table=any(fk_own),
        fk_table_extends_key_table=_extends(fk_table, pk_table),
        key_table_extends_fk_table=_extends(pk_table, fk_table),
    )
