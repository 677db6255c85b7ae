"""Names read from data, configs and run folders (task, dataset, model, adapter, prompt and study names)
made into file and folder names that stay inside the folder they are joined to.

Every place that joins such a name to a path calls ``component`` (tests/foundation/test_path_names.py lists each
one). A name is kept as it is but for what could take it out of its folder: a path separator (``/``,
``\\``) or a control character becomes ``_``, as LegalEvalHub writes ``meta-llama/Llama-3-8B`` as
``meta-llama_Llama-3-8B`` in its paths, and a leading ``.`` becomes ``_``, so a name is never ``.``,
``..`` or a hidden file. So the names of LegalBench's tasks (some hold parentheses), PROSLEX statutes
and earlier run folders stay what they were. What cannot be a name at all (empty, not a string, longer
than a file system allows) is refused with a message naming the setting.
"""

from __future__ import annotations

import re

from legalft.foundation.errors import UserError

UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]+")  # path separators and control characters
MAX_BYTES = 200  # below the 255 bytes of common file systems, leaving room for suffixes (".json", "_fold4")


def component(name: object, what: str) -> str:
    """``name`` as one file or folder name (see the module docstring). ``what`` names where the name came
    from (``data.name``, ``task``), for the message when it cannot be one."""
    if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip():
        raise UserError(f"{what}={name!r}: a name is needed here (it names a file or folder). Set a non-empty name.")
    safe = UNSAFE.sub("_", str(name).strip())
    if safe.startswith("."):
        safe = "_" + safe[1:]
    if len(safe.encode("utf-8")) > MAX_BYTES:
        raise UserError(f"{what}={str(name)[:40]!r}...: {len(safe.encode('utf-8'))} bytes, longer than the "
                        f"{MAX_BYTES} a file or folder name may have here. Choose a shorter name.")
    return safe


def components(names, what: str) -> dict[str, str]:
    """name -> ``component(name)`` for several names that share one folder; two names that would share a
    file name (``a/b`` and ``a_b``) are refused, naming both."""
    seen: dict[str, str] = {}
    result = {}
    for name in names:
        safe = component(name, what)
        if safe in seen and seen[safe] != name:
            raise UserError(f"{what}: {seen[safe]!r} and {name!r} would both be written as {safe!r}. Rename one of them.")
        seen[safe] = name
        result[name] = safe
    return result
