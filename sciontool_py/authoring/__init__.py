"""Tools for dialect authors: check, test, scaffold, JSON Schema.

Never imported by `hook` or `status`: they may import YAML and jsonschema-free
helpers freely.
"""
