"""Many's parameters (Bloom m, k, p, candidate strategy, bit-vectors, filters) and how the ``inds``
configuration section sets them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lakemeta.config import IndConfig
from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.filters import FilterConfig
from lakemeta.inds.proposer import Strategy


@dataclass(frozen=True)
class ManyConfig:
    """Many's parameters: Bloom m, k, p (§5.2), candidate strategy (§4.1), bit-vector kind (§4.5), filters;
    beyond the paper, validation on the driver and signatures sized to their columns."""

    params: BloomParams = field(default_factory=BloomParams)
    strategy: Strategy = "dep2refs"
    indexed: bool = True
    filters: FilterConfig = field(default_factory=FilterConfig)
    driver_validation_values: int = IndConfig.driver_validation_values  # lakemeta.inds.containment
    max_doublings: int = IndConfig.max_doublings  # lakemeta.inds.sized_signatures
    driver_signature_values: int = IndConfig.driver_signature_values  # lakemeta.inds.columns


def many_config(config: IndConfig) -> ManyConfig:
    """The library's configuration from the ``inds`` section: Bloom m, k, p, strategy, filter profile."""
    profiles = {"relational": FilterConfig(), "web": FilterConfig.web(), "none": FilterConfig.none()}
    filters = dataclasses.replace(profiles[config.filters], tau=config.tau)
    if config.null_values is not None:
        filters = dataclasses.replace(filters, null_values=config.null_values)
    return ManyConfig(
        BloomParams(config.m, config.k, config.p),
        config.strategy,
        config.indexed,
        filters,
        config.driver_validation_values,
        config.max_doublings,
        config.driver_signature_values,
    )
