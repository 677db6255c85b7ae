"""Which adapters a LoRA run trains, on which tasks, and which tasks each one is scored on.

- ``pooled``: one adapter on every task;
- ``per_task``: one adapter per task;
- ``leave_one_out``: one adapter on every task but ``heldout``, scored zero-shot on ``heldout``;
- ``kfold_test``: per task, one adapter per fold of its test split, trained on the train split plus
  the other folds and scored on its own fold, so every test example is scored once by an adapter that
  did not see it. More training data than LegalBench's few-shot train splits, but trained on test
  data: its runs are marked not comparable with published numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from legalft.data.example import Task
from legalft.foundation.errors import UserError
from legalft.foundation.path_names import components

REGIMES = ("pooled", "per_task", "leave_one_out", "kfold_test")


@dataclass(frozen=True)
class Adapter:
    name: str
    train: list[Task]  # what it learns from: each task's train split
    scored: list[Task]  # what it is scored on: each task's test split
    fold_of: str | None = None  # kfold_test: the task whose test split this adapter's fold belongs to


def training_groups(task_names: list[str], regime: str, heldout: str | None) -> list[tuple[str, list[str], list[str]]]:
    """(adapter name, tasks it trains on, tasks it is scored on) for each adapter a regime trains
    (kfold_test: one group per task, split into folds by ``plan``)."""
    if regime == "pooled":
        return [("pooled", task_names, task_names)]
    if regime in ("per_task", "kfold_test"):
        return [(name, [name], [name]) for name in task_names]
    if regime == "leave_one_out":
        if heldout is None:
            raise UserError("method.regime=leave_one_out needs method.heldout=<task>.")
        others = [name for name in task_names if name != heldout]
        if heldout not in task_names:
            raise UserError(f"method.heldout={heldout!r} is not among the tasks loaded ({', '.join(task_names)}).")
        if not others:
            raise UserError(f"method.regime=leave_one_out: no task left to train on besides {heldout!r}; set data.tasks.")
        return [(f"without_{heldout}", others, [heldout])]
    raise UserError(f"method.regime={regime!r}: choose one of {', '.join(REGIMES)}.")


def test_folds(task: Task, folds: int, seed: int) -> list[Task]:
    """``task`` once per fold: train split plus the other folds of the test split to train on, the fold to score."""
    from sklearn.model_selection import KFold

    if not task.test or len(task.test) < folds:
        raise UserError(f"method.regime=kfold_test: {task.spec.name} has {len(task.test or [])} test rows, "
                        f"fewer than method.folds={folds}.")
    splitter = KFold(n_splits=folds, shuffle=True, random_state=seed)
    return [
        replace(task, train=task.train + [task.test[i] for i in rest], test=[task.test[i] for i in held_out])
        for rest, held_out in splitter.split(task.test)
    ]


def plan(tasks: list[Task], regime: str = "pooled", heldout: str | None = None, folds: int = 5,
         seed: int = 0) -> list[Adapter]:
    by_name = {t.spec.name: t for t in tasks}
    adapters = []
    for name, trained, scored in training_groups(list(by_name), regime, heldout):
        if regime == "kfold_test":
            adapters += [Adapter(f"{name}_fold{i}", [part], [part], fold_of=name)
                         for i, part in enumerate(test_folds(by_name[name], folds, seed))]
        else:
            adapters.append(Adapter(name, [by_name[n] for n in trained], [by_name[n] for n in scored]))
    components([a.name for a in adapters], "adapter")  # each adapter has a folder of its own
    return adapters
