"""Instrumented runs: the shim that runs inside the user's interpreter, the run report, the runner.

Importing this package must stay cheap and must never import torch (the language server imports it).
"""
