"""Fixtures for the language-server tests (helpers live in ``lsp_session``)."""

from __future__ import annotations

from lsp_session import lsp, workspace

__all__ = ["lsp", "workspace"]
