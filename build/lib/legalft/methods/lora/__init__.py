"""LoRA / QLoRA adapters on causal LMs: a plan of adapters per regime (``plan``), loading and
saving them (``adapters``), fitting and resuming one (``fitting``), and the method that trains and
rescores a plan in one loop (``method``)."""
