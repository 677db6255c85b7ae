"""Choices the classifier components offer, importable without torch (the config check reads them)."""

POOLINGS = ("max", "mean", "attention")
CHUNK_EMBEDDINGS = ("cls", "mean")
