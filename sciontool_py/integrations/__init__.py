"""Wiring for agent frameworks that register hooks in code rather than in a settings file."""
