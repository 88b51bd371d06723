"""Halting a run, freezing a workspace (docs/halting.md): the service, its API and its pages."""
