"""A fine-tuned encoder classifier as the stock ``transformers`` sequence classifier of its architecture
(``BertForSequenceClassification``, ``RobertaForSequenceClassification``, ...), loadable by
``AutoModelForSequenceClassification`` with nothing else installed.

The run's head reads each window's first token and applies one linear layer; the stock heads put a dense layer
and a tanh between the two. That layer is set to ``EPSILON`` times the identity and the linear layer's weights
divided by ``EPSILON``: tanh is linear to within ``(EPSILON * h)**2 / 3`` of its input there, so on a document
that fits one window the stock model's logits equal the run's to about 1e-5 (``tests/export/test_export.py`` checks
1e-4). Windowing and pooling over windows are not the stock model's: ``legalft.json`` says how the run read
longer documents, and ``predict.py`` applies it."""

from __future__ import annotations

import torch
from torch import nn

from legalft.foundation.errors import UserError

EPSILON = 1e-4


def stock_classifier(module, labels: list[str], names: dict[str, str], multi_label: bool, where: str):
    """The transformers model equal to ``module`` (an ``EncoderClassifierModule``) on one window; ``names``:
    each label's name for ``id2label`` (e.g. "IPC 302: Punishment for murder")."""
    from transformers import AutoModelForSequenceClassification

    classifier = module.model
    if classifier.chunk_embedding != "cls":
        raise UserError(f"{where}: this encoder reads each window as the mean of its tokens "
                        f"(model.chunk_embedding={classifier.chunk_embedding}), which no stock transformers head "
                        "does; its run still classifies with predict.py. Train with model.chunk_embedding=cls to "
                        "export a transformers model.")
    encoder = classifier.encoder
    config = encoder.config.__class__.from_dict(encoder.config.to_dict())
    config.num_labels = len(labels)
    config.id2label = {i: names.get(label, label) for i, label in enumerate(labels)}
    config.label2id = {name: i for i, name in config.id2label.items()}
    config.problem_type = "multi_label_classification" if multi_label else "single_label_classification"
    stock = AutoModelForSequenceClassification.from_config(config)
    base = getattr(stock, stock.base_model_prefix)
    missing, unexpected = base.load_state_dict(encoder.state_dict(), strict=False)
    if unexpected or any(not key.startswith("pooler.") for key in missing):
        raise UserError(f"{where}: the encoder's weights do not fit {type(stock).__name__} ({(unexpected or missing)[0]}); "
                        "its run still classifies with predict.py.")
    dense, out = head_layers(stock, base, where)
    weight, bias = classifier.head.weight.detach(), classifier.head.bias.detach()
    with torch.no_grad():
        dense.weight.copy_(torch.eye(dense.weight.shape[0]) * EPSILON)
        dense.bias.zero_()
        out.weight.copy_(weight / EPSILON)
        out.bias.copy_(bias)
    return stock.eval()


def head_layers(stock, base, where: str) -> tuple[nn.Linear, nn.Linear]:
    """(the dense layer before the tanh, the layer that gives the logits) of a stock sequence classifier."""
    head = getattr(stock, "classifier", None)
    if isinstance(head, nn.Linear) and getattr(base, "pooler", None) is not None:  # BERT: pooler, then classifier
        return base.pooler.dense, head
    if isinstance(getattr(head, "dense", None), nn.Linear) and isinstance(getattr(head, "out_proj", None), nn.Linear):
        return head.dense, head.out_proj  # RoBERTa, Longformer: dense, tanh, out_proj on the first token
    raise UserError(f"{where}: {type(stock).__name__}'s head is not one this export maps onto; its run still "
                    "classifies with predict.py.")


POOLING_FILE = "pooling.safetensors"  # attention pooling's window scorer, which no stock head has


def save_pooling(module, folder) -> None:
    """The attention pooling's weights beside the export (``legalft.json`` names the file); other poolings have none."""
    from pathlib import Path

    from safetensors.torch import save_file

    score = module.model.pooling.score
    if score is not None:
        save_file({name: p.detach().contiguous() for name, p in score.state_dict().items()},
                  str(Path(folder) / POOLING_FILE))


def from_stock(folder, num_labels: int, pooling: str):
    """The run's document classifier (a plain ``ChunkedDocumentClassifier``) rebuilt from its export: the stock
    model's encoder, its head as the one linear layer it stands for (the dense layer times the output layer, the
    tanh between them linear at ``EPSILON``), and the pooling ``legalft.json`` records (attention pooling's weights
    from ``POOLING_FILE``)."""
    from pathlib import Path

    from transformers import AutoModelForSequenceClassification

    from legalft.models.components.chunked_classifier import ChunkedDocumentClassifier

    folder = Path(folder)
    from safetensors import SafetensorError

    try:
        stock = AutoModelForSequenceClassification.from_pretrained(folder)
    except (OSError, ValueError, SafetensorError) as err:  # a missing, truncated or damaged weights file
        raise UserError(f"{folder}: not a transformers model folder, or its weights are damaged "
                        f"({str(err).splitlines()[0][:200]}). Export the run again.") from None
    if stock.config.num_labels != num_labels:
        raise UserError(f"{folder}: the model has {stock.config.num_labels} labels and legalft.json {num_labels}. "
                        "Export the run again.")
    base = getattr(stock, stock.base_model_prefix)
    dense, out = head_layers(stock, base, str(folder))
    classifier = ChunkedDocumentClassifier(base, num_labels, pooling=pooling, chunk_embedding="cls")
    with torch.no_grad():
        classifier.head.weight.copy_(out.weight @ dense.weight)
        classifier.head.bias.copy_(out.weight @ dense.bias + out.bias)
    if classifier.pooling.score is not None:
        from safetensors.torch import load_file

        try:
            classifier.pooling.score.load_state_dict(load_file(str(folder / POOLING_FILE)))
        except (OSError, RuntimeError) as err:
            raise UserError(f"{folder / POOLING_FILE}: the attention pooling's weights are missing or damaged ({err}). "
                            "Export the run again.") from None
    return classifier.eval()
