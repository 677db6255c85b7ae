"""A SetFit model (``method=setfit``: the contrastively tuned sentence encoder and the logistic-regression head) in
``setfit``'s own save format, which ``setfit.SetFitModel.from_pretrained`` loads: the body as a sentence-transformers
folder (the encoder's safetensors and tokenizer, mean pooling, normalisation), ``config_setfit.json`` with the label
names, and the head as ``model_head.pkl``, the joblib file setfit writes and reads. Written without setfit
installed; this project never reads the pickle back (``predict.py`` classifies with the run folder)."""

from __future__ import annotations

import json
from pathlib import Path

HEAD = "model_head.pkl"
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def save(embedder, tokenizer, head, folder, labels: list[str], max_length: int) -> None:
    """``embedder``: a ``legalft.models.contrastive.SentenceEmbedder`` (masked mean of the encoder's token states,
    L2-normalised, as the Pooling and Normalize modules compute it); ``head``: the fitted scikit-learn head over its
    embeddings, predicting label indices (single-label) or one column per label (one-vs-rest)."""
    import joblib

    folder = Path(folder)
    embedder.encoder.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    write_json(folder / "modules.json", MODULES)
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": max_length, "do_lower_case": False})
    write_json(folder / "config_sentence_transformers.json", {"prompts": {}, "default_prompt_name": None,
                                                              "similarity_fn_name": "cosine"})
    pooling = {"word_embedding_dimension": embedder.encoder.config.hidden_size, "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": False, "include_prompt": True}
    (folder / "1_Pooling").mkdir()
    write_json(folder / "1_Pooling" / "config.json", pooling)
    (folder / "2_Normalize").mkdir()
    write_json(folder / "config_setfit.json", {"normalize_embeddings": False, "labels": list(labels)})
    joblib.dump(head, folder / HEAD)


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
