"""Tools for dialect authors: check, test, scaffold, JSON Schema.

Never imported by `hook` or `status`, so these modules may import YAML freely.
"""
