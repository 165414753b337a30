"""Cell-value normalisation applied identically to the indexed corpus and to every query.

MATE (§3, Eq. 4) indexes cell values and finds joinable rows by *equality* of values; XASH (§5.3) hashes
the characters of a value. Two cells that a user considers the same value ("Berlin " / "berlin", "3.0" /
"3", "+03" / "3") must therefore become the same string before posting lists are built and before a query
is looked up. The paper tokenises its corpora but does not spell out the rules, so this module fixes them,
and both sides of a search call :func:`normalise_values`:

1. non-string arrays are cast to strings (Arrow's canonical formatting: 3.0 -> "3", True -> "true");
2. Unicode NFKC (compatibility forms fold: full-width "A1" (U+FF21 U+FF11) -> "a1", "℡" -> "tel",
   NBSP -> space);
3. lower-case, then NFKC again, because lower-casing can leave a non-NFKC sequence behind;
4. every run of Unicode white space (Python's ``str.isspace`` set) becomes one space; leading and
   trailing spaces are removed;
5. plain decimal numbers (``[+-]?digits[.digits]``, ASCII digits after NFKC) get one spelling: no '+',
   no leading zeros in the integer part (one zero is kept before a point: ".5" -> "0.5"), no trailing
   zeros in the fraction, no point without a fraction, "-0" -> "0". Identifiers with leading zeros such
   as "007" therefore equal "7": both sides of a join typically disagree on such types (an integer column
   against a zero-padded string), so this favours recall. Exponent notation, thousands separators and
   other locales are left as written: rewriting them would need a locale guess.
6. a value that is empty after all this is null (a missing value, never joinable, never indexed).

Null stays null. The function is idempotent
(``normalise_values(normalise_values(a)) == normalise_values(a)``), which is tested.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

# Python's str.isspace set: ASCII controls \t-\r, \x1c-\x1f, NEL, and Unicode separators (Zs, Zl, Zp).
_WHITESPACE_RUN = r"[\t\n\x{0b}\f\r\x{1c}-\x{1f}\x{85}\p{Z}]+"
_DECIMAL = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$"

# (pattern, replacement) in order; each keeps a decimal a decimal, so the order matters only as written.
_DECIMAL_REWRITES: tuple[tuple[str, str], ...] = (
    (r"^\+", ""),  # no explicit plus sign
    (r"^(-?)\.", r"\10."),  # ".5" -> "0.5" (RE2 rewrite: group 1 then the literal "0.")
    (r"^(-?[0-9]*\.[0-9]*?)0+$", r"\1"),  # trailing zeros of the fraction
    (r"\.$", ""),  # a point without fraction: "3." -> "3"
    (r"^(-?)0+([0-9])", r"\1\2"),  # leading zeros of the integer part, keeping its last digit
    (r"^-0$", "0"),  # negative zero
)


def _as_string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    return pc.cast(values, pa.large_string())


def normalise_values(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Normalised copy of ``values`` (rules in the module docstring), same length, same string type."""
    text = _as_string_array(values)
    text = pc.utf8_normalize(text, form="NFKC")
    text = pc.utf8_normalize(pc.utf8_lower(text), form="NFKC")
    text = pc.utf8_trim(pc.replace_substring_regex(text, _WHITESPACE_RUN, " "), characters=" ")
    is_decimal = pc.match_substring_regex(text, _DECIMAL)
    if pc.any(is_decimal).as_py():
        number = text
        for pattern, replacement in _DECIMAL_REWRITES:
            number = pc.replace_substring_regex(number, pattern, replacement)
        text = pc.if_else(is_decimal, number, text)
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, text.type), text)
