"""The plugin API and its runtime: Status, CycleState, extension-point interfaces, events and
hints, listers, snapshot (upstream framework/)."""
