import pytest
import torch

from legalft.data.chunking import chunk_documents
from legalft.models.components.chunked_classifier import ChunkedDocumentClassifier, ChunkPooling


@pytest.fixture(scope="module")
def tokenizer(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_dir)


def test_windows_overlap_and_cover_the_document(tokenizer):
    text = " ".join(["the accused struck the deceased"] * 40)  # 200 words
    n_tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    (doc,), report = chunk_documents(tokenizer, [text], max_length=32, stride=8, max_chunks=100)
    assert doc.n_tokens == n_tokens and doc.n_cut == 0 and report.documents_cut == 0
    assert all(len(c) <= 32 for c in doc.chunks)
    body = [c[1:-1] for c in doc.chunks]  # without [CLS] ... [SEP]
    for left, right in zip(body, body[1:]):
        assert left[-8:] == right[:8]  # consecutive windows share `stride` tokens
    assert sum(len(b) for b in body) - 8 * (len(body) - 1) == n_tokens


def test_an_end_aligned_last_window_is_full_and_ends_where_the_document_ends(tokenizer):
    text = " ".join(["the accused struck the deceased"] * 40) + " and fled"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    (rest,), _ = chunk_documents(tokenizer, [text], max_length=32, stride=8, max_chunks=100)
    (end,), _ = chunk_documents(tokenizer, [text], max_length=32, stride=8, max_chunks=100,
                                last_window="end")
    assert len(rest.chunks[-1]) < 32  # the tokenizer's last window: what is left, to be padded
    assert end.chunks[:-1] == rest.chunks[:-1] and len(end.chunks) == len(rest.chunks)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert end.chunks[-1] == [cls, *ids[-30:], sep]  # full, and the document's end
    (short,), _ = chunk_documents(tokenizer, ["short text"], max_length=32, stride=8, max_chunks=100, last_window="end")
    assert short.chunks == [tokenizer("short text")["input_ids"]]  # one window shorter than max_length stays as is
    (cut,), _ = chunk_documents(tokenizer, [text], max_length=32, stride=8, max_chunks=2, last_window="end")
    assert cut.chunks == rest.chunks[:2]  # a document cut short: its last kept window is full already


def test_windows_past_max_chunks_are_counted_as_cut(tokenizer):
    long_text = " ".join(["the accused struck the deceased"] * 40)
    docs, report = chunk_documents(tokenizer, [long_text, "short text"], max_length=32, stride=8, max_chunks=2)
    assert len(docs[0].chunks) == 2 and len(docs[1].chunks) == 1
    covered = 30 + 22  # first window's 30 tokens, then 30 - 8 new ones
    assert docs[0].n_cut == docs[0].n_tokens - covered and docs[1].n_cut == 0
    assert report.documents == 2 and report.documents_cut == 1 and report.tokens_cut == docs[0].n_cut
    assert "1 of 2 documents" in str(report)


def test_stride_must_leave_new_tokens(tokenizer):
    with pytest.raises(ValueError, match="stride"):
        chunk_documents(tokenizer, ["text"], max_length=16, stride=14, max_chunks=2)


def test_pooling_modes_ignore_padding_windows():
    chunks = torch.tensor([[[1.0, 5.0], [3.0, -1.0], [100.0, 100.0]], [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert ChunkPooling(2, "max")(chunks, mask).tolist() == [[3.0, 5.0], [2.0, 2.0]]
    assert ChunkPooling(2, "mean")(chunks, mask).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    attention = ChunkPooling(2, "attention")
    torch.nn.init.zeros_(attention.score.weight)  # equal scores: attention reduces to the mean
    torch.nn.init.zeros_(attention.score.bias)
    assert attention(chunks, mask).tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_unknown_pooling_is_rejected():
    with pytest.raises(ValueError, match="pooling 'sum'"):
        ChunkPooling(2, "sum")


@pytest.mark.parametrize("pooling", ["max", "mean", "attention"])
@pytest.mark.parametrize("model_dir", ["tiny_bert_dir", "tiny_longformer_dir"])
def test_document_logits_do_not_depend_on_batch_neighbours(request, tokenizer, model_dir, pooling):
    from transformers import AutoModel

    torch.manual_seed(0)
    encoder = AutoModel.from_pretrained(request.getfixturevalue(model_dir), add_pooling_layer=False)
    model = ChunkedDocumentClassifier(encoder, num_labels=3, pooling=pooling, dropout=0.0).eval()
    texts = [" ".join(["the mob attacked the village"] * 30), "the accused threatened the witness"]
    docs, _ = chunk_documents(tokenizer, texts, max_length=32, stride=8, max_chunks=4)

    def logits(documents):
        batch = tokenizer.pad({"input_ids": [c for d in documents for c in d.chunks]}, return_tensors="pt")
        counts = torch.tensor([len(d.chunks) for d in documents])
        with torch.no_grad():
            return model(batch["input_ids"], batch["attention_mask"], counts)

    together = logits(docs)
    assert together.shape == (2, 3) and len(docs[0].chunks) == 4
    torch.testing.assert_close(together[0], logits(docs[:1])[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(together[1], logits(docs[1:])[0], atol=1e-5, rtol=1e-4)


def test_longformer_gets_global_attention_on_the_first_token(tiny_longformer_dir, tiny_bert_dir):
    from transformers import AutoModel

    longformer = ChunkedDocumentClassifier(AutoModel.from_pretrained(tiny_longformer_dir, add_pooling_layer=False), 2)
    bert = ChunkedDocumentClassifier(AutoModel.from_pretrained(tiny_bert_dir, add_pooling_layer=False), 2)
    assert longformer.global_first_token and not bert.global_first_token
    seen = {}
    longformer.encoder.register_forward_hook(lambda m, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    ids = torch.randint(5, 50, (2, 24))
    longformer(ids, torch.ones_like(ids), torch.tensor([1, 1]))
    assert seen["global_attention_mask"][:, 0].tolist() == [1, 1]
    assert seen["global_attention_mask"][:, 1:].sum() == 0


def test_a_huge_document_is_tokenized_only_as_far_as_its_kept_windows(tokenizer):
    """A 30 MB document once made a run peak at 9.7 GB: only the prefix its windows can hold is tokenized."""
    seen = []

    class Recording:
        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def __call__(self, texts, **kwargs):
            seen.extend(len(t) for t in ([texts] if isinstance(texts, str) else texts))
            return tokenizer(texts, **kwargs)

    huge = " ".join(["the accused struck the deceased with an axe"] * 20_000)  # 900 kB
    (doc,), report = chunk_documents(Recording(), [huge], max_length=32, stride=8, max_chunks=3)
    assert max(seen) < 2_000, "tokenized far past the kept windows"
    # the same windows as tokenizing the whole text, and the length estimated within 2%
    whole = tokenizer(huge, truncation=True, max_length=32, stride=8, return_overflowing_tokens=True)["input_ids"][:3]
    assert doc.chunks == whole
    exact = len(tokenizer(huge, add_special_tokens=False)["input_ids"])
    assert abs(doc.n_tokens - exact) / exact < 0.02 and doc.n_cut == doc.n_tokens - (30 + 22 + 22)
    assert report.documents_cut == 1
