"""Every registry entry resolves to what it names, and the run order puts each step after what it reads."""

from __future__ import annotations

import inspect

from lakemeta.component import StateComponent
from lakemeta.registry import DISCOVERY_STEPS, STATE_COMPONENTS, discovery_step, state_component


def test_state_components_resolve_to_components_of_their_name():
    for entry in STATE_COMPONENTS:
        component = state_component(entry)
        assert issubclass(component, StateComponent) and not inspect.isabstract(component)
        assert (component.name, component.state_table()) == (entry.name, f"state/{entry.name}")
        assert "table_name" in component.schema.fieldNames()  # replaced and dropped tables are found by it
    assert len({entry.name for entry in STATE_COMPONENTS}) == len(STATE_COMPONENTS)


def test_discovery_steps_resolve_and_come_after_what_they_read():
    seen: set[str] = set()
    for step in DISCOVERY_STEPS:
        run = discovery_step(step)
        assert list(inspect.signature(run).parameters) == ["catalog", "lake", "config", "committed"]
        assert set(step.after) <= seen, step
        seen.add(step.name)
