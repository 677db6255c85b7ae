"""What an entry point hands a method, for a new run (``Method.run``) and for scoring a finished one
again (``Method.rescore``): the run folder, the seed, the tasks, the loggers and a trainer factory, and
the config groups a method works with beside its own node (model, prompt, lora, datamodule, engine,
explanations).

A method reads these and its own node (``conf/method/<name>.yaml``, what it was built from), never the
composed config: each setting lives in one group, and the context is the one place that knows which
group feeds what. A new run's context is built from the composed config (``for_new_run``); a
finished run's from its ``config.yaml`` in the current layout (``for_saved_run``), where a class
named in it is built only after ``saved_config.instantiate_from_run`` checked it is registered.

The device is not a field: what trains runs where the trainer factory's ``trainer`` group says
(``accelerator``, ``devices``, ``strategy``), and a model used outside a trainer (scoring, embedding)
goes to the GPU when there is one, so no second setting can disagree with the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

from legalft.foundation.ranks import secondary_rank
from legalft.runs.folder import RunFolder

if TYPE_CHECKING:
    from legalft.data.example import Task
    from legalft.data.protocol import Protocol


@dataclass
class RunContext:
    folder: RunFolder
    seed: int
    metric_mode: str
    data: DictConfig | None  # the data source: where its documents are and what they mean; None only where a saved
    # config.yaml lacks it (said when the data is read)
    model: DictConfig
    model_choice: str | None  # the model config's name, what a new run records as its model (None: rescoring)
    prompt: DictConfig | None = None
    lora: DictConfig | None = None  # the adapters' shape and quantization
    datamodule: DictConfig | None = None  # how a trained encoder's documents are batched
    engine: DictConfig | None = None  # where a causal LM answers (in this process, or a server)
    explanations: DictConfig | None = None  # how explanations and evidence are scored (conf/explanations)
    composed: DictConfig = field(default=None, repr=False)  # for config.yaml, the trainer, callbacks and loggers
    saved: bool = False  # built from a run folder's config.yaml: scoring a finished run again
    trained_data: DictConfig | None = None  # a finished run's own data config, before the scoring command's overrides
    given_loggers: list | None = None
    protocol_node: DictConfig | None = None  # how documents are split, folded and scored (conf/protocol)
    windows: DictConfig | None = None  # how a document is cut into windows and their scores pooled (conf/windows)
    # what the data source's reader found in the files of the tasks this context loaded, by task (Task.notes)
    data_notes: dict = field(default_factory=dict)
    # where each task's dataset came from and its splits' fingerprints, by task (Task.origin; data=hf)
    data_origin: dict = field(default_factory=dict)

    @classmethod
    def for_new_run(cls, cfg: DictConfig, folder: RunFolder, model_choice: str) -> RunContext:
        return cls(folder=folder, seed=cfg.seed, metric_mode=cfg.metric_mode, data=cfg.data, model=cfg.model,
                   model_choice=model_choice, prompt=cfg.get("prompt"), lora=cfg.get("lora"),
                   datamodule=cfg.get("datamodule"), engine=cfg.get("engine"), explanations=cfg.get("explanations"),
                   composed=cfg, protocol_node=cfg.get("protocol"), windows=cfg.get("windows"))

    @classmethod
    def for_saved_run(cls, folder: RunFolder, data_overrides: Mapping, loggers=(), engine: DictConfig | None = None,
                      explanations: DictConfig | None = None, explanation_overrides: Mapping | None = None
                      ) -> RunContext:
        """A finished run, as its config.yaml says, on its own test split or the data keys ``data_overrides``
        replaces (``evaluate.py run=DIR data.test_path=...``); ``loggers`` and ``engine`` are the scoring
        command's. Explanations are scored as the run scored them, with the keys the command sets
        (``explanation_overrides``) replaced; ``explanations``, the command's, for runs that recorded none."""
        from legalft.configuration.resolvers import with_data_overrides
        from legalft.foundation.errors import UserError
        from legalft.runs.saved_config import load_run_config

        cfg = load_run_config(folder)
        if "seed" not in cfg:
            raise UserError(f"{folder.config}: no seed, so not the config of a run train.py wrote. Restore the run's "
                            "config.yaml, or pass the run folder train.py wrote (under checkpoints/).")
        prompt = cfg.get("prompt")  # an earlier release's group of another name is read here (legalft.runs.migrations)
        data = cfg.get("data")  # checked where it is read: a method first says what else the run lacks
        wanted = (data_overrides or {}).get("_target_")
        if wanted and data is not None and wanted != data.get("_target_"):
            raise UserError(f"the data override names another data format ({wanted.rsplit('.', 1)[-1]}) than run "
                            f"{folder.path} trained on ({str(data.get('_target_')).rsplit('.', 1)[-1]}, "
                            f"data.name={data.get('name')}): drop data=..., and point data.test_path at files in "
                            f"the run's own format. Documents without labels: predict.py run={folder.path} input=FILE.")
        own = cfg.get("explanations", explanations)
        if own is not None and explanation_overrides:
            own = OmegaConf.merge(own, dict(explanation_overrides))
        return cls(folder=folder, seed=cfg.seed, metric_mode=cfg.get("metric_mode", "paper"),
                   data=None if data is None else with_data_overrides(data, data_overrides), model=cfg.get("model"),
                   model_choice=None, prompt=None if prompt is None else recorded_prompt(prompt), lora=cfg.get("lora"),
                   datamodule=cfg.get("datamodule"), engine=engine, explanations=own, composed=cfg, saved=True,
                   trained_data=data, given_loggers=list(loggers), protocol_node=cfg.get("protocol"),
                   windows=cfg.get("windows"))

    # what the run is about
    def group(self, name: str) -> DictConfig | None:
        """Any config group's node (``conf/<name>``) as the command composed it, or as a finished run recorded it:
        what a method reads beyond the fields above, so that a method with a group of its own widens nothing here."""
        return None if self.composed is None else self.composed.get(name)

    def build(self, node: DictConfig, key: str):
        """The object ``node`` (the config at ``key``) names: a saved config's only once checked."""
        if self.saved:
            from legalft.runs.saved_config import instantiate_from_run

            return instantiate_from_run(node, key, self.folder.config)
        from hydra.utils import instantiate

        return instantiate(node)

    def source(self, data: DictConfig | None = None):
        """The data source (``data``: a method's own variant of the run's data config)."""
        data = self.data if data is None else data
        if data is None:
            from legalft.foundation.errors import UserError

            raise UserError(f"{self.folder.config}: no data config, so the run's data cannot be read. Restore the "
                            "run's config.yaml, or pass the run folder train.py wrote (under checkpoints/).")
        return self.build(data, "data")

    def tasks(self, data: DictConfig | None = None, source=None) -> list[Task]:
        """The data source's tasks (``source``: one already built), split as the protocol says
        (``legalft.data.protocol``)."""
        source = self.source(data) if source is None else source
        tasks = self.protocol.applied(source.load(), getattr(source, "validation_from_train", False))
        self.recorded(tasks)
        return tasks

    def recorded(self, tasks: list[Task]) -> None:
        """What the run's record keeps of the tasks' data: the reader's notes and the datasets' origins."""
        self.data_notes.update({task.spec.name: task.notes for task in tasks if task.notes})
        self.data_origin.update({task.spec.name: task.origin for task in tasks if task.origin})

    def test_tasks(self, data: DictConfig | None = None) -> list[Task]:
        """The tasks with their test splits only: what rescoring a run that needs no training data reads."""
        source = self.source(data)
        tasks = self.protocol.applied(source.load_test(), getattr(source, "validation_from_train", False))
        self.recorded(tasks)
        return tasks

    @cached_property
    def protocol(self) -> Protocol:
        from legalft.data.protocol import Protocol

        return Protocol.from_config(self.protocol_node)

    @property
    def cv_folds(self) -> int | None:
        return self.protocol.cv_folds or None

    def folds(self, pool: list) -> list[tuple[list[int], list[int]]]:
        """The protocol's ``cv_folds`` folds of ``pool`` (``legalft.evaluation.cross_validation``)."""
        from legalft.evaluation.cross_validation import stratified_folds

        return stratified_folds(pool, self.protocol.cv_folds, self.protocol.seed, self.protocol.stratify)

    def label_codes(self) -> dict[str, str]:
        """{label: code} (PROSLEX's ``s3`` for IPC 302): as the run recorded them, else from its data source."""
        from legalft.foundation.errors import UserError

        recorded = self.folder.read_codes()
        if recorded:
            return recorded
        try:
            label_of_code = getattr(self.source(), "label_of_code", None) or {}
        except UserError:
            return {}
        return {label: code for code, label in label_of_code.items()}

    @property
    def answering_engine(self) -> DictConfig | None:
        """What answers prompts: the command's engine, else the one the run's config recorded (an in-context run's)."""
        if self.engine is not None or self.composed is None:
            return self.engine
        return self.composed.get("engine")

    @property
    def whole_test_split(self) -> bool:
        """False for a run scored on ``protocol.limit`` rows: not comparable with published results."""
        return self.protocol.whole_test_split

    # what the run writes
    @cached_property
    def config_text(self) -> str:
        """The run's config.yaml: the composed config resolved, or a finished run's file as it is."""
        return self.folder.config.read_text() if self.saved else OmegaConf.to_yaml(self.composed, resolve=True)

    @property
    def config_digest(self) -> str:
        from legalft.evaluation.run_results import config_digest

        return config_digest(self.config_text)

    def write_config(self) -> None:
        """Save the resolved config in a new run's folder (rank 0 owns it: a DDP run's other ranks re-run
        the script); a folder that holds training state must have been started with the same config."""
        if not self.saved and not secondary_rank():
            self.folder.write_config(self.config_text)

    def keep_checkpoints(self) -> None:
        self.folder.keep_checkpoints(self.composed.get("checkpoints") or {})

    # what the run trains and logs with
    @cached_property
    def loggers(self) -> list:
        """The run's loggers (``logger`` group), open from the first call; the scoring command's when rescoring."""
        if self.given_loggers is not None:
            return self.given_loggers
        from legalft.training.trainer import instantiate_loggers

        return instantiate_loggers(self.composed)

    @property
    def trainer_config(self) -> DictConfig:
        return self.composed.trainer

    def callbacks(self) -> list:
        """The ``callbacks`` group's callbacks, new ones at each call."""
        from hydra.utils import instantiate

        return [instantiate(c) for c in (self.composed.get("callbacks") or {}).values()]

    def trainer(self, callbacks: list | None = None, with_loggers: bool = True, **overrides):
        """A Lightning trainer from the ``trainer`` group, with ``callbacks`` (default: the group's), the
        run's loggers and the project's checkpoint plugins."""
        from legalft.training.trainer import build_trainer

        return build_trainer(self.composed, self.callbacks() if callbacks is None else callbacks, with_loggers,
                             **overrides)


def recorded_prompt(prompt: DictConfig) -> DictConfig:
    """A run folder's prompt settings with the keys added since older folders were written, at the values
    those runs ran with."""
    return OmegaConf.merge({"score_split": "test", "explain": False, "template": None}, prompt)
