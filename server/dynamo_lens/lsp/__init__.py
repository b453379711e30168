"""The language server (``dynamo-lens serve``): renders findings and run reports over LSP; computes none.

One module per feature (``diagnostics``, ``hover``, ``inlay_hints``, ``code_lens``, ``code_actions``, ``commands``),
all registered by :func:`dynamo_lens.lsp.server.create_server`; ``positions`` owns every index conversion and
``convert`` every Finding → LSP conversion.
"""
