"""n-ary joinable-table search after MATE (Esmailoghli et al., VLDB 2022).

normalise  cell values as both sides of a join see them (case, whitespace, numbers)
xash       the XASH hash of a value (§5.3)
superkey   row super keys, their stored form and the row filter (§5.1, §6.3)
index      posting-list items of a table's rows and the columnar index (§3, §5.1)
search     Algorithm 1: top-k tables by joinability with both table rules and the row filter (§6)
state      the state component ``posting_lists``: the posting lists as Delta state, maintained with Spark
           under inserts, deletes and updates (§5.4), and their frozen XASH hasher
discover   a search over those posting lists, which Spark fetches, into the catalog's ``joinable_tables``

All but ``state`` and ``discover`` run without Spark (the package imports neither: the core runs inside
``mapInArrow`` tasks). The baselines MATE is measured against, Bloom super keys (§7.1.2) and SCR (§7.1.1),
are in ``lakemeta.reference.bloom_superkey`` and ``lakemeta.reference.scr_search``; over the Delta posting
lists, SCR is ``discover.find_joinable`` with ``scheme=SCR``.
"""

from lakemeta.joinsearch.index import PostingIndex, table_postings
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.joinsearch.search import JoinableTable, SearchResult, mate_search
from lakemeta.joinsearch.superkey import SuperKeyHasher
from lakemeta.joinsearch.xash import XashHasher

__all__ = [
    "JoinableTable",
    "PostingIndex",
    "SearchResult",
    "SuperKeyHasher",
    "XashHasher",
    "mate_search",
    "normalise_values",
    "table_postings",
]
