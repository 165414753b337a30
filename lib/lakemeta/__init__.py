"""lakemeta: incremental metadata (sketches, agree-sets, posting lists) and discovery for a data lake."""

__version__ = "0.1.0"
