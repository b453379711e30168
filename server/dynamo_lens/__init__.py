"""Dynamo Lens: what torch.compile guards on, why it recompiles, and how to stop it."""

__version__ = "0.1.0"
