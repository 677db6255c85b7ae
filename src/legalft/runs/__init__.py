"""A run's folder and what keeps it whole: its files' places (``folder``), its lock, its saved config read in
this release's layout, the context a method runs in, and checkpoints written atomically and read without
running code."""
