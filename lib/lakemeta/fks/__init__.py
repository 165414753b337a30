"""Foreign keys: key candidates, BML-pruned FK candidates and their randomness ranking (Zhang et al.,
"On Multi-Column Foreign Key Discovery", §2-§5; BML §5.3)."""
