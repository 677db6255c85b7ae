"""A finished run as a folder for use outside this project: the export itself and its push to the Hub
(``exporting``), the command (``command``, ``python -m legalft.export``), the model card (``card``), the stock
transformers classifier an encoder run becomes and is rebuilt from (``hf_export``), and an export read back by the
method that wrote it (``reading``, what ``predict.py run=<the export>`` uses). ``adapter``: the Python functions of
earlier releases."""

from legalft.export.exporting import export, push

__all__ = ["export", "push"]
