"""What the methods are built from: the ``Method`` interface and the run record (``base``), fitting that resumes
(``trained``), the one fold loop (``folds``), one scikit-learn-like classifier per task (``per_task``, ``features``),
a document classifier over windows (``document_classifier``, ``document_steps``), its late fusion with the classical
side (``fusion``) and its refit on every document once it has chosen (``refit``)."""
