"""Fine-tune and evaluate legal text classifiers (PROSLEX, LegalBench) with Hydra and Lightning."""

__version__ = "0.1.0"
