"""LexGLUE's classification tasks by name (``data=lexglue data.task=ledgar``): ``data=hf`` over the ``lex_glue``
dataset with each task's label descriptions and headline metric. The label names are the dataset's own
(``ClassLabel`` features); the descriptions are what prompts say of each, from LexGLUE's paper (Chalkidis et al.,
ACL 2022) where its names are codes (SCOTUS issue areas). EUR-LEX's labels are EuroVoc concept ids, which prompts
show as they are.

``case_hold`` is multiple choice (a holding picked among five), not classification: it is refused with that said."""

from __future__ import annotations

from legalft.data.hf import HfSource
from legalft.foundation.errors import UserError

ECTHR = {"2": "Right to life", "3": "Prohibition of torture", "5": "Right to liberty and security",
         "6": "Right to a fair trial", "8": "Right to respect for private and family life",
         "9": "Freedom of thought, conscience and religion", "10": "Freedom of expression",
         "11": "Freedom of assembly and association", "14": "Prohibition of discrimination",
         "P1-1": "Protection of property"}
SCOTUS = dict(zip((str(i) for i in range(1, 15)), (
    "Criminal Procedure", "Civil Rights", "First Amendment", "Due Process", "Privacy", "Attorneys", "Unions",
    "Economic Activity", "Judicial Power", "Federalism", "Interstate Relations", "Federal Taxation", "Miscellaneous",
    "Private Action")))
TASKS = {  # task -> what prompts say of its labels (empty: the names say it)
    "ecthr_a": ECTHR, "ecthr_b": ECTHR, "scotus": SCOTUS, "eurlex": {}, "ledgar": {}, "unfair_tos": {},
}
MULTIPLE_CHOICE = ("case_hold",)


class LexGlueSource(HfSource):
    """``data=lexglue``: ``task`` one of LexGLUE's six classification tasks; ``path`` the hub dataset, or a local copy
    (a folder ``DatasetDict.save_to_disk`` wrote of that task); ``revision`` pins the hub's."""

    license = "cc-by-4.0"  # a model card's licence: LexGLUE's (its tasks' sources carry their own terms)

    def __init__(self, task: str, path: str = "coastalcph/lex_glue", revision: str | None = None,
                 cache_dir: str | None = None) -> None:
        if task in MULTIPLE_CHOICE:
            raise UserError(f"data.task={task} is LexGLUE's multiple-choice task (a holding picked among five "
                            "candidates), not a classification one: data=lexglue trains and scores "
                            f"{', '.join(TASKS)}. Score case_hold with an in-context harness such as "
                            "lm-evaluation-harness.")
        if task not in TASKS:
            raise UserError(f"data.task={task}: one of {', '.join(TASKS)} (LexGLUE's classification tasks).")
        from pathlib import Path

        local = Path(path).exists()  # a save_to_disk copy of the task: no config name to pick
        super().__init__(path=path, name=None if local else task, task=task, revision=revision,
                         descriptions=TASKS[task], metric="macro_f1", category="lexglue", cache_dir=cache_dir)
