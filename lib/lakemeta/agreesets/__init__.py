"""DynASt agree-set maintenance (Belhajjame, DynASt) and the keys / FDs derived from agree-sets.

The paper's algorithms, Spark-free (exported here): ``relation`` (compressed relation, attribute-value
evidence vectors), ``evidence`` (zip-bit products, Alg. 1-3), ``multiset`` (ES^m(r), Property 1), ``astree``
(§6), ``hitting_sets`` (MMCS), ``dependencies`` (UCCs, FDs, approximate FDs), ``bitmasks`` (attribute
masks), ``values`` (the canonical values compared) and ``batch_delta`` (one table batch's change of ES^m).
On Spark: ``state`` (the state component ``state/agree_sets``) and ``discover`` (the keys and FDs written to
the catalog). The in-memory per-table state DynASt describes is ``lakemeta.reference.dynast``.
"""

from lakemeta.agreesets.astree import AStree
from lakemeta.agreesets.bitmasks import masks_from_indices, masks_to_names, names_to_mask
from lakemeta.agreesets.dependencies import (
    FunctionalDependencies,
    approximate_fds,
    fd_errors,
    maximal_agree_sets,
    minimal_fds,
    minimal_uccs,
    unique_columns,
)
from lakemeta.agreesets.evidence import ZipBitProducts, delta_minus, delta_plus, from_scratch
from lakemeta.agreesets.multiset import AgreeSetMultiset
from lakemeta.agreesets.relation import CompressedRelation

__all__ = [
    "AStree",
    "AgreeSetMultiset",
    "CompressedRelation",
    "FunctionalDependencies",
    "ZipBitProducts",
    "approximate_fds",
    "delta_minus",
    "delta_plus",
    "fd_errors",
    "from_scratch",
    "masks_from_indices",
    "masks_to_names",
    "maximal_agree_sets",
    "minimal_fds",
    "minimal_uccs",
    "names_to_mask",
    "unique_columns",
]
