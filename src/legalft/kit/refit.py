"""Choices that cost no training document: once a document classifier has chosen on validation documents the
protocol set aside from its training split (the epoch count, the fusion or a side alone, thresholds), its final
model is trained again on every document with what was chosen (``protocol.refit``), as scikit-learn's
``GridSearchCV(refit=True)`` refits and as early stopping is followed by training for the epoch it found.

``refit.json`` in the run folder records what was chosen before the final model trains, so a rerun or a requeued
job goes straight to the refit (resuming from its own checkpoint) instead of choosing again; ``done`` says the
final model is in the run's best checkpoint."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from legalft.evaluation.choices import Choice
from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write_json


@dataclass
class RefitPlan:
    epochs: int  # what the final model trains for: the chosen epoch's count, or trainer.max_epochs
    chosen_on: int  # validation documents the choices were made on
    documents: int  # what the final model learns from: training and validation documents
    choices: dict[str, dict] = field(default_factory=dict)  # legalft.evaluation.choices records, by name
    fields: dict = field(default_factory=dict)  # the results' fusion fields (legalft.kit.fusion.results_fields)
    encoder_refit: bool = True  # False where the classical side alone predicts: the model's scores play no part
    done: bool = False
    seconds: float | None = None  # the refit's wall time

    def chosen(self) -> dict[str, Choice]:
        return {name: Choice(**record) for name, record in self.choices.items()}

    def record(self) -> dict:
        """The run record's ``refit``: what the final model learnt from, for how many epochs, at what cost."""
        return {"documents": self.documents, "chosen_on": self.chosen_on, "epochs": self.epochs,
                "model_refit": self.encoder_refit, **({"seconds": self.seconds} if self.seconds is not None else {})}

    def describe(self) -> str:
        what = (f"refit on {self.documents} documents for {self.epochs} epoch{'s' if self.epochs != 1 else ''}"
                if self.encoder_refit else f"classical side refit on {self.documents} documents")
        return what + (f" ({self.seconds / 60:.1f} min)" if self.seconds is not None else "")

    def write(self, path) -> None:
        atomic_write_json(path, asdict(self))

    @classmethod
    def read(cls, path) -> RefitPlan | None:
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text())
            plan = cls(**record)
            plan.chosen()
        except (ValueError, TypeError):
            raise UserError(f"{path}: not a refit record of this release (epochs, chosen_on, documents, choices). "
                            "Move it away to choose again, or train the run again in a new folder.") from None
        return plan
