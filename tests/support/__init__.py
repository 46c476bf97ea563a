"""Helpers shared by the tests: builders, clients and data by topic (no tests here)."""
