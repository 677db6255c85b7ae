"""legalft.data.chunked_batches: the windowed batches a document classifier reads, in training (through
EncoderDataModule) and in predict.py (directly), labelled or not."""

from __future__ import annotations

import torch

from legalft.data.chunked_batches import ChunkCollator, by_length, encode_targets, encoded_split
from legalft.data.example import Example, TaskSpec


def test_targets_of_labelled_and_unlabelled_documents():
    single = TaskSpec(name="t", labels=("No", "Yes"), multi_label=False)
    multi = TaskSpec(name="m", labels=("a", "b", "c"), multi_label=True)
    assert encode_targets(Example(id="1", text="x", labels=("Yes",)), single).item() == 1
    assert encode_targets(Example(id="1", text="x", labels=()), single).item() == -100  # cross-entropy ignores it
    assert encode_targets(Example(id="1", text="x", labels=("a", "c")), multi).tolist() == [1.0, 0.0, 1.0]
    assert encode_targets(Example(id="1", text="x", labels=()), multi).tolist() == [0.0, 0.0, 0.0]


def test_a_batch_holds_whole_documents_sorted_by_length(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    tiny_tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    task = TaskSpec(name="t", labels=("No", "Yes"), multi_label=False)
    texts = ["word " * 40, "short", "word " * 10]
    split = encoded_split([Example(id=str(i), text=t, labels=()) for i, t in enumerate(texts)], task, tiny_tokenizer,
                          {"max_length": 16, "stride": 4, "max_chunks": 8, "last_window": "rest"}, "input")
    ordered = by_length(split)
    assert [item.index for item in ordered.items] == [1, 2, 0]
    batch = ChunkCollator(tiny_tokenizer)(ordered.items)
    counts = batch["chunk_counts"].tolist()
    assert counts[0] == 1 and counts[2] > 1 and batch["input_ids"].shape[0] == sum(counts)
    assert batch["index"].tolist() == [1, 2, 0] and torch.all(batch["targets"] == -100)


def test_the_experts_sentences_travel_beside_the_documents_in_training_batches(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    tiny_tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    task = TaskSpec(name="m", labels=("a", "b", "c"), multi_label=True)
    examples = [Example(id="1", text="word " * 40, labels=("a",)), Example(id="2", text="short", labels=("b",)),
                Example(id="3", text="no spans", labels=("c",))]
    sentences = [[("one two", ("a",)), ("three", ())], [("four five six", ("a", "b"))], []]
    split = encoded_split(examples, task, tiny_tokenizer, {"max_length": 16, "stride": 4, "max_chunks": 8,
                                                           "last_window": "rest"}, "train", sentences)
    batch = ChunkCollator(tiny_tokenizer)(split.items)
    assert batch["sentence_input_ids"].shape[0] == 3 == batch["sentence_attention_mask"].shape[0]
    assert batch["sentence_targets"].tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    assert batch["sentence_attention_mask"][1].sum() < batch["sentence_attention_mask"][2].sum()  # padded per sentence
    assert "sentence_input_ids" not in ChunkCollator(tiny_tokenizer)(split.items[2:])  # a document without spans
    plain = encoded_split(examples, task, tiny_tokenizer, {"max_length": 16, "stride": 4, "max_chunks": 8,
                                                           "last_window": "rest"}, "val")
    assert "sentence_input_ids" not in ChunkCollator(tiny_tokenizer)(plain.items)
