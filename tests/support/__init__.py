"""Helpers the test files share: payload modules, layouts, stand-ins and subprocess scripts (no tests)."""
