"""What a run leaves in its folder (Hydra's run directory), and how it is read back: ``RunFolder`` names
every file a run writes there (docs/run-folders.md), and methods ask it for the places and records."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from legalft.data.example import TaskSpec
from legalft.foundation.errors import UserError
from legalft.evaluation import run_results
from legalft.foundation.io import atomic_write_json, atomic_write_text
from legalft.foundation.path_names import component
from legalft.runs.saved_layout import config_differences


log = logging.getLogger(__name__)

class RunFolder:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def config(self) -> Path:  # the resolved config of the run
        return self.path / "config.yaml"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def best_checkpoint(self) -> Path:
        return self.checkpoints / "best.ckpt"

    @property
    def last_checkpoint(self) -> Path:
        return self.checkpoints / "last.ckpt"

    @property
    def refit_checkpoint(self) -> Path:  # the final model's training state while it is trained again (legalft.kit.refit)
        return self.checkpoints / "refit" / "last.ckpt"

    @property
    def refit_plan(self) -> Path:  # what was chosen before the final model was trained again on every document
        return self.path / "refit.json"

    # files of the methods' that other modules read too (each method lists its own in ``Method.run_files``)
    LABEL_MAP, ADAPTERS, LABEL_SPACES = "label_map.json", "adapters", "label_spaces.json"

    @property
    def label_map(self) -> Path:
        return self.path / self.LABEL_MAP

    @property
    def thresholds(self) -> Path:
        return self.path / "thresholds.json"

    @property
    def fusion(self) -> Path:  # an encoder fused with method=classical: how each side is standardised
        return self.path / "fusion.json"

    @property
    def evidence(self) -> Path:  # the sentence scorer that names each predicted section's evidence
        return self.path / "evidence.json"

    def write_evidence(self, selector) -> None:
        if selector is not None:
            atomic_write_text(self.evidence, selector.to_json())

    def read_evidence(self):
        """The run's evidence scorer, or None when it has none (a task without experts' spans, an older run)."""
        from legalft.evaluation.evidence import EvidenceSelector

        if not self.evidence.exists():
            return None
        return EvidenceSelector.from_json(self.evidence.read_text(), str(self.evidence))

    @property
    def training_data(self) -> Path:  # ids and text hashes of what the run learnt from
        return self.path / "training_data.json"

    @staticmethod
    def training_record(groups: Iterable[tuple[TaskSpec, list]]) -> dict:
        """What ``training_data.json`` holds for ``groups`` ((task, its training examples) pairs): per task,
        the examples' ids and text hashes, sorted."""
        from legalft.evaluation.run_results import text_hash

        return {"tasks": {spec.name: {"ids": sorted({e.id for e in examples}),
                                      "text_sha256": sorted({text_hash(e.text) for e in examples})}
                          for spec, examples in groups}}

    def write_training_data(self, groups: Iterable[tuple[TaskSpec, list]]) -> None:
        atomic_write_json(self.training_data, self.training_record(groups))

    def recorded_training(self) -> dict | None:
        """The run's ``training_data.json``; None for run folders written before runs recorded it, or one that
        is damaged (said once, in the log)."""
        if not self.training_data.exists():
            return None
        try:
            seen = json.loads(self.training_data.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.warning("%s cannot be read (%s): overlap with the training data is not checked", self.training_data, err)
            return None
        return seen if isinstance(seen, dict) else None

    def overlap_with_training(self, groups: Iterable[tuple[TaskSpec, list]]) -> int | None:
        """How many of the scored examples (``groups``: (task, examples) pairs) the run learnt from: an example
        of the same task with the same text, or the same id where the task's ids name documents (not LegalBench's
        row numbers, which restart at 0 in every split). None when the run did not record its training data.
        The same count at training (``flag_overlap``) and at rescoring."""
        from legalft.evaluation.run_results import text_hash

        seen = self.recorded_training()
        if seen is None:
            return None
        per_task = seen.get("tasks")
        count = 0
        for spec, examples in groups:
            # run folders of older releases: one list of ids and texts for every task
            trained = per_task.get(spec.name) if isinstance(per_task, dict) else seen
            if not isinstance(trained, dict):
                continue
            ids = set(trained.get("ids") or []) if spec.ids_name_documents else set()
            texts = set(trained.get("text_sha256") or [])
            count += sum(e.id in ids or text_hash(e.text) in texts for e in examples)
        return count

    def flag_overlap(self, groups: Iterable[tuple[TaskSpec, list]]) -> dict:
        """The result fields that mark scores taken on examples the run learnt from (``comparable`` false and
        how many), said in the log; empty when there are none."""
        groups = [(spec, list(examples)) for spec, examples in groups]
        overlap = self.overlap_with_training(groups)
        if overlap is None:
            log.info("run folder %s records no training data (written by an older version): overlap not checked",
                     self.path)
            return {}
        if not overlap:
            return {}
        log.warning("%d of the %d scored examples are ones the run trained or validated on (same task, and the same "
                    "text or document id): the scores are recorded as not comparable", overlap,
                    sum(len(examples) for _, examples in groups))
        return {"comparable": False, "overlap_with_training": overlap}

    def trained_on_exactly(self, groups: Iterable[tuple[TaskSpec, list]]) -> bool | None:
        """Whether ``groups`` hold the documents the run learnt from, ids and texts alike (what a classical side
        refitted at rescoring must see); None when the run did not record them."""
        from legalft.evaluation.run_results import text_hash

        seen = self.recorded_training()
        if seen is None:
            return None
        groups = [(spec, list(examples)) for spec, examples in groups]
        if "tasks" in seen:
            return seen == self.training_record(groups)
        every = [e for _, examples in groups for e in examples]  # older releases' record
        return seen == {"ids": sorted({e.id for e in every}), "text_sha256": sorted({text_hash(e.text) for e in every})}

    @property
    def metrics(self) -> Path:  # written last: its presence marks a complete result (docs/results.md)
        return self.path / run_results.METRICS

    @property
    def predictions(self) -> Path:
        return self.path / run_results.PREDICTIONS

    @property
    def cv_results(self) -> Path:  # a cross-validated run's folds and their summary
        return self.path / "cv.json"

    @property
    def adapters(self) -> Path:  # a LoRA run's adapters, one folder each
        return self.path / self.ADAPTERS

    def adapter(self, name: str) -> Path:
        return self.adapters / component(name, "adapter")

    def adapter_checkpoints(self, name: str) -> Path:  # an adapter's Lightning checkpoints while it trains
        return self.checkpoints / component(name, "adapter")

    def folds(self, task: str | None = None) -> Path:
        """Where a cross-validated run keeps each finished fold's record (``legalft.kit.folds``): of its one
        task, or of ``task`` among several (a per-task method's)."""
        return self.checkpoints / "cv" / (component(task, "task") if task is not None else "")

    @property
    def label_spaces(self) -> Path:  # a LoRA run's labels per adapter and task, as trained
        return self.path / self.LABEL_SPACES

    @property
    def hydra_record(self) -> Path:  # what Hydra recorded when the run started (its overrides, its choices)
        return self.path / ".hydra"

    def finished(self) -> bool:
        """Trained and scored: a rerun into the folder scores the best checkpoint instead of training."""
        from legalft.training.checkpoints import readable

        return self.metrics.is_file() and self.best_checkpoint.exists() and readable(self.best_checkpoint)

    def keep_checkpoints(self, keep: Mapping) -> None:
        """Once the run has finished: remove what ``keep`` (the ``checkpoints`` group: ``keep_best``,
        ``keep_optimizer``) says not to keep (the training state, ``last.ckpt`` of the run and of each LoRA
        adapter, unless ``keep_optimizer``), of the checkpoints this command saved; one an earlier command left
        (a finished run scored again), or a file it did not write, stays."""
        from legalft.training.checkpoints import remove_if_saved_here

        unwanted = [] if keep.get("keep_best", True) else [self.best_checkpoint]
        if not keep.get("keep_optimizer", False) and self.checkpoints.is_dir():
            unwanted += [self.last_checkpoint, *self.checkpoints.glob("*/last.ckpt")]
        for path in unwanted:
            remove_if_saved_here(path)

    def has_training_state(self) -> bool:
        return self.checkpoints.exists()

    def write_config(self, yaml_text: str) -> None:
        """Save the resolved config; a run folder that already holds training state must have been
        started with the same config, or resuming it would silently mix two experiments."""
        if self.has_training_state() and self.config.exists():
            changed = config_differences(self.config.read_text(), yaml_text)
            if changed:
                raise UserError(
                    f"run folder {self.path} holds a run started with another config, so it cannot be resumed "
                    f"with this one:\n  " + "\n  ".join(changed) + "\nRerun with the run's own overrides, or start a new "
                    "run folder (leave hydra.run.dir unset)."
                )
        atomic_write_text(self.config, yaml_text)

    def write_task(self, task: TaskSpec, codes: dict[str, str] | None = None) -> None:
        atomic_write_json(
            self.label_map,
            {
                "task": task.name,
                "multi_label": task.multi_label,
                "labels": list(task.labels),
                "descriptions": task.label_descriptions,
                "codes": codes or {},
                "metric": task.metric,
                "category": task.category,
                "statutes": task.statutes,
                "kind": task.kind,
            },
        )

    def read_task(self) -> TaskSpec:
        data = json.loads(self.require(self.label_map, "label map").read_text())
        return TaskSpec(
            name=data["task"],
            labels=tuple(data["labels"]),
            multi_label=data["multi_label"],
            label_descriptions=data.get("descriptions", {}),
            # run folders of older releases lack these: the TaskSpec defaults stand
            **{key: data[key] for key in ("metric", "category", "statutes", "kind") if key in data},
        )

    def read_codes(self) -> dict[str, str]:
        """Each label's code in the data (PROSLEX's ``s3`` for IPC 302), where the run recorded them."""
        if not self.label_map.exists():
            return {}
        codes = json.loads(self.label_map.read_text()).get("codes") or {}
        return {label: code for code, label in codes.items()} if isinstance(codes, dict) else {}

    def write_thresholds(self, labels: tuple[str, ...], thresholds: np.ndarray) -> None:
        atomic_write_json(self.thresholds, {label: float(t) for label, t in zip(labels, thresholds)})

    def read_thresholds(self, labels: tuple[str, ...]) -> np.ndarray:
        """Tuned thresholds when the run has them, else 0.5 for every label."""
        if not self.thresholds.exists():
            return np.full(len(labels), 0.5)
        tuned = json.loads(self.thresholds.read_text())
        return np.array([tuned.get(label, 0.5) for label in labels])

    def require_finished(self, then: str) -> None:
        """A run folder that train.py finished (its results written); ``then``: what the user does after."""
        self.require_folder()
        if not self.metrics.is_file():
            raise UserError(f"run={self.path}: the run has not finished (no {self.metrics.name}). Finish it with "
                            f"train.py (hydra.run.dir set to this folder), then {then}.")

    def require_folder(self) -> None:
        if not self.path.is_dir():
            raise UserError(f"run={self.path}: no such run folder. Pass the folder train.py wrote (under checkpoints/).")

    def require(self, path: Path, what: str) -> Path:
        self.require_folder()
        if not path.exists():
            raise UserError(
                f"run={self.path}: no {what} ({path.relative_to(self.path)}). "
                "The run did not finish training; rerun train.py with hydra.run.dir set to this folder to resume it."
            )
        return path
