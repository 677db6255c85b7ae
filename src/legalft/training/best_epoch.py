"""Which epoch the ``ModelCheckpoint`` that keeps the best validation epoch last kept, counted the same on every rank
(its best score is reduced across ranks) and kept in the training checkpoints, so a resumed run knows it too: how many
epochs a run that chose its epoch on a validation share trains its final model for (``legalft.kit.refit``)."""

from __future__ import annotations

import lightning as L


class BestEpoch(L.pytorch.callbacks.Callback):
    """Looks at the checkpoint callback's best score when an epoch starts and when fitting ends: Lightning runs the
    checkpoint callbacks last, so at an epoch's own end hooks the best score may not hold that epoch yet. A change
    seen then is the epoch that just ended, ``trainer.current_epoch`` epochs in."""

    def __init__(self) -> None:
        self.epochs = 0  # epochs trained up to the best one (1: the first)
        self.score = None

    def look(self, trainer) -> None:
        best = trainer.checkpoint_callback.best_model_score if trainer.checkpoint_callback else None
        if best is not None and (self.score is None or float(best) != self.score):
            self.epochs, self.score = trainer.current_epoch, float(best)

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.look(trainer)

    def on_fit_end(self, trainer, pl_module) -> None:
        self.look(trainer)

    def state_dict(self) -> dict:
        return {"epochs": self.epochs, "score": self.score}

    def load_state_dict(self, state_dict: dict) -> None:
        self.epochs, self.score = state_dict["epochs"], state_dict["score"]
