"""python -m legalft.export run=... out=...: the export command (``legalft.export.command``)."""

from legalft.export.command import main

main()
