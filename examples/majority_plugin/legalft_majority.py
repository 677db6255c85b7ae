"""A method and a data source from outside the project: the majority class of each task's training
labels, and a toy task. Installed with this folder's pyproject.toml, they are registered by its
``legalft.methods`` and ``legalft.sources`` entry points; docs/extending.md walks through it."""

from __future__ import annotations

from collections import Counter

from legalft.data.example import Example, Task, TaskSpec
from legalft.evaluation import run_results
from legalft.evaluation.metrics import single_label_scores
from legalft.methods.base import Method


class ToySource:
    """One task, written here: sentences about contracts (Yes) or not (No)."""

    def __init__(self, name: str = "toy", test_size: int = 4) -> None:
        self.name, self.test_size = name, test_size

    def load(self) -> list[Task]:
        rows = [(f"r{i}", f"sentence {i} {'about a contract' if i % 3 else 'about the weather'}",
                 "Yes" if i % 3 else "No") for i in range(12)]
        examples = [Example(id=i, text=text, labels=(label,)) for i, text, label in rows]
        spec = TaskSpec(name=self.name, labels=("No", "Yes"), multi_label=False, metric="balanced_accuracy",
                        category="toy")
        return [Task(spec=spec, train=examples[self.test_size:], test=examples[: self.test_size])]

    load_test = load


class MajorityMethod(Method):
    """Predicts each task's most common training label for every test example."""

    name = "majority"

    def run(self, ctx) -> dict:
        """``ctx``: the run's ``legalft.run_context.RunContext`` (its data, folder, seed, loggers)."""
        tasks = ctx.tasks()
        ctx.write_config()
        return self.score(ctx, tasks)

    def rescore(self, ctx) -> dict:
        """``ctx``: the finished run's context, read from its folder (with the scoring command's data keys)."""
        return self.score(ctx, ctx.tasks())

    def score(self, ctx, tasks: list[Task]) -> dict:
        scores, records = {}, []
        for task in tasks:
            majority = Counter(e.labels[0] for e in task.train).most_common(1)[0][0]
            gold = [e.labels[0] for e in task.test]
            scores[task.spec.name] = {**single_label_scores(gold, [majority] * len(gold), task.spec.labels),
                                      "metric": task.spec.metric, "category": task.spec.category}
            records += [{"task": task.spec.name, "id": e.id, "gold": e.labels[0], "prediction": majority}
                        for e in task.test]
        fingerprint = run_results.data_fingerprint(e for task in tasks for e in task.test)
        info = run_results.run_info(method=self.name, model="none", seed=ctx.seed, data_fingerprint=fingerprint,
                                    config_digest=ctx.config_digest)
        run_results.publish(ctx.folder.path, info, scores, records, ctx.loggers)
        return {f"test/{task}/{key}": value for task, s in scores.items() for key, value in s.items()
                if isinstance(value, float)}
