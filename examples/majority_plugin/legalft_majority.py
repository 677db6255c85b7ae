"""Two methods and a data source from outside the project: the majority class of each task's training
labels, a linear classifier over hashed word counts trained with Lightning (a trained method, on the
project's ``TrainedMethod``), and a toy task. Installed with this folder's pyproject.toml, they are registered by its
``legalft.methods`` and ``legalft.sources`` entry points; docs/extending.md walks through it."""

from __future__ import annotations

from collections import Counter

from legalft.data.example import Example, Task, TaskSpec
from legalft.evaluation.metrics import single_label_scores
from legalft.kit.base import Method
from legalft.kit.trained import TrainedMethod


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
        """``ctx``: the run's ``legalft.runs.context.RunContext`` (its data, folder, seed, loggers)."""
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
        self.publish(ctx, scores, records, [e for task in tasks for e in task.test], model="none")
        return {f"test/{task}/{key}": value for task, s in scores.items() for key, value in s.items()
                if isinstance(value, float)}


class HashedWordsMethod(TrainedMethod):
    """A trained method from outside the project: a linear classifier over hashed word counts, fitted with
    Lightning by ``TrainedMethod.fit`` (resumable), published and finished as the project's own are. Its
    weights are saved as safetensors (no pickle), so rescoring loads them and scores again."""

    name = "hashed_words"
    weights_file = "hashed_words.safetensors"  # in the run folder

    def __init__(self, features: int = 64, lr: float = 0.5) -> None:
        self.features, self.lr = features, lr

    def counts(self, examples):
        import zlib

        import torch

        rows = torch.zeros(len(examples), self.features)
        for i, example in enumerate(examples):
            for word in example.text.lower().split():
                rows[i, zlib.crc32(word.encode()) % self.features] += 1.0
        return rows

    def run(self, ctx) -> dict:
        import lightning as L
        import torch
        from safetensors.torch import save_file
        from torch.utils.data import TensorDataset

        from legalft.foundation.io import atomic_write

        (task,) = ctx.tasks()
        ctx.write_config()
        L.seed_everything(ctx.seed, workers=True)
        targets = torch.tensor([task.spec.labels.index(e.labels[0]) for e in task.train])
        module = linear_words(self.features, len(task.spec.labels), self.lr)
        batches = L.LightningDataModule.from_datasets(TensorDataset(self.counts(task.train), targets), batch_size=4)
        self.fit(ctx.trainer(callbacks=[], enable_checkpointing=False), module, batches, ctx.folder.last_checkpoint)
        weights = ctx.folder.path / self.weights_file
        atomic_write(weights, lambda tmp: save_file(module.linear.state_dict(), str(tmp)))
        return self.score(ctx, task, module)

    def rescore(self, ctx) -> dict:
        from safetensors.torch import load_file

        (task,) = ctx.tasks()
        module = linear_words(self.features, len(task.spec.labels), self.lr)
        module.linear.load_state_dict(load_file(str(ctx.folder.path / self.weights_file)))
        return self.score(ctx, task, module)

    def score(self, ctx, task: Task, module) -> dict:
        import torch

        with torch.no_grad():
            chosen = module.linear(self.counts(task.test)).argmax(dim=1).tolist()
        predicted = [task.spec.labels[i] for i in chosen]
        gold = [e.labels[0] for e in task.test]
        scores = {task.spec.name: {**single_label_scores(gold, predicted, task.spec.labels),
                                   "metric": task.spec.metric, "category": task.spec.category}}
        records = [{"task": task.spec.name, "id": e.id, "gold": g, "prediction": p}
                   for e, g, p in zip(task.test, gold, predicted)]
        self.publish(ctx, scores, records, task.test, model=f"hashed_{self.features}")
        self.finish(ctx)
        return {f"test/{task.spec.name}/{key}": value for key, value in scores[task.spec.name].items()
                if isinstance(value, float)}


def linear_words(features: int, labels: int, lr: float):
    """The plain PyTorch model (one linear layer) in a thin Lightning wrapper."""
    import lightning as L
    import torch

    class Wrapper(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(features, labels)

        def training_step(self, batch, batch_index):
            counts, targets = batch
            return torch.nn.functional.cross_entropy(self.linear(counts), targets)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=lr)

    return Wrapper()
