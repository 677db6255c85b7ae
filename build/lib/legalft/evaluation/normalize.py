"""Normalisation of model generations before they are compared with gold answers (LegalBench appendix E):
punctuation stripped, whitespace trimmed, lower-cased, and Porter-stemmed where a task calls for it."""

from __future__ import annotations

import string
from functools import cache

_PUNCTUATION = str.maketrans("", "", string.punctuation)


@cache
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def normalize(text: str, stem: bool = False) -> str:
    # As LegalBench's own code: the stemmer sees the whole string as one token.
    text = str(text).translate(_PUNCTUATION).strip().lower()
    return _stemmer().stem(text) if stem else text
