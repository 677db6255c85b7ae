"""Every reader of outside input, fuzzed (hypothesis): random and mutated files and answers give a
correct result or one UserError naming the file (or key), never another exception, and nothing is
written beside them. Bounded: a fixed set of examples per reader (derandomized, no example database),
so the fast suite runs the same cases everywhere; LEGALFT_FUZZ_EXAMPLES=N searches further."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import ROOT, write_legalbench_task
from legalft.foundation.errors import UserError

# LEGALFT_FUZZ_EXAMPLES=2000 pytest tests/data/test_fuzz_readers.py: a longer, random search (new cases each time)
LONGER = os.environ.get("LEGALFT_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(LONGER or 60), deadline=None, derandomize=not LONGER, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12), inner, max_size=4), max_leaves=20)


@st.composite
def mutated(draw, valid: bytes) -> bytes:
    """``valid`` with a few bytes deleted, inserted or replaced, or cut short: what damage or a hand edit does."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate"]))
        byte = draw(st.sampled_from([b",", b"\t", b'"', b"\n", b"\r", b"{", b"[", b"\xff", b"\x00", b"\xef\xbb\xbf", b"x"]))
        if kind == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "insert":
            data[at:at] = byte
        elif kind == "replace" and at < len(data):
            data[at:at + 1] = byte
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@contextmanager
def folder_with(files: dict[str, bytes]):
    """A new folder holding ``files``; on leaving, checks the reader wrote nothing there."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for relative, content in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(content)
        before = files_of(folder)
        yield folder
        assert files_of(folder) == before, "a reader wrote beside what it read"


def read_or_user_error(read, *names: str):
    """``read()``'s result, or None when it refused with a UserError that names one of ``names``."""
    try:
        return read()
    except UserError as err:
        assert any(name in str(err) for name in names), f"the message names none of {names}: {err}"
        return None


# --- data files ------------------------------------------------------------------------------------------
VALID_CSV = b"id,text,label\nd1,The accused fled,a\nd2,\"A mob, armed\",b\nd3,Facts,\"[\"\"a\"\", \"\"b\"\"]\"\n"
VALID_JSONL = b'{"id": "d1", "text": "The accused fled", "label": ["a"]}\n{"id": "d2", "text": "x", "label": "b"}\n'


@FUZZ
@given(suffix=st.sampled_from([".csv", ".tsv", ".jsonl"]), multi=st.booleans(),
       content=st.one_of(st.binary(max_size=400), mutated(VALID_CSV), mutated(VALID_JSONL),
                         mutated(VALID_CSV.replace(b",", b"\t"))))
@example(suffix=".jsonl", multi=False, content=b'{"id": "1", "text": "T", "label": "a"}\n{"id": "2", "text": "x"}')
def test_custom_data_files(suffix, multi, content):
    from legalft.data.custom import CustomSource

    with folder_with({f"train{suffix}": content}) as folder:
        path = folder / f"train{suffix}"
        examples = read_or_user_error(
            lambda: CustomSource(train_path=str(path), id_column="id", multi_label=multi).read("train"), str(path))
        if examples is not None:
            assert examples and all(e.text.strip() and e.labels for e in examples)
            assert len({e.id for e in examples}) == len(examples)


VALID_PROSLEX = json.dumps({"2002.INSC.1.txt": {"fact": "The accused struck him.", "statute": ["s3"],
                                                "explanation": {"struck him": ["s3"]}, "doc_url": "u"},
                            "2002.INSC.2.txt": {"fact": "A mob rioted.", "statute": ["s1", "s9"]}}).encode()


@FUZZ
@given(content=st.one_of(st.binary(max_size=300), mutated(VALID_PROSLEX),
                         json_values.map(lambda v: json.dumps(v).encode()),
                         st.dictionaries(st.text(max_size=8), json_values, max_size=3).map(lambda v: json.dumps(v).encode())),
       policy=st.sampled_from(["error", "drop_label", "drop_document"]))
def test_proslex_collections(content, policy):
    from legalft.data.proslex import read_split

    with folder_with({"Train/train_collection.json": content}) as folder:
        path = folder / "Train" / "train_collection.json"
        examples = read_or_user_error(lambda: read_split([path], {"s1": "IPC 147", "s3": "IPC 302"}, policy),
                                      str(path), "unknown statute codes")
        if examples is not None:
            assert all(e.labels and set(e.labels) <= {"IPC 147", "IPC 302"} and e.text for e in examples)


VALID_FIRE = (json.dumps({"doc_id": "a", "doc_url": "u", "fact": "He stabbed her. She died.", "statute": [
    {"section": "Section 302 IPC", "exact_fact": "He stabbed her.", "reasoning_trace": "why"}]}) + "\n" + json.dumps(
    {"doc_id": "b", "doc_url": "u", "fact": "He cheated.", "statute": [
        {"section": "S. 420 of the IPC", "exact_fact": "", "reasoning_trace": ""},
        {"section": "Section 3 Dowry Prohibition Act", "exact_fact": "", "reasoning_trace": ""}]}) + "\n").encode()


@FUZZ
@given(content=st.one_of(st.binary(max_size=300), mutated(VALID_FIRE),
                         st.lists(json_values, max_size=3).map(lambda v: "\n".join(map(json.dumps, v)).encode())),
       labelled=st.booleans(), policy=st.sampled_from(["error", "drop_label", "drop_document"]))
def test_fire2026_files(content, labelled, policy):
    from legalft.data.fire2026 import read_file

    with folder_with({"train.jsonl": content}) as folder:
        path = folder / "train.jsonl"
        examples = read_or_user_error(lambda: read_file(path, labelled, policy), str(path))
        if examples is not None:
            assert examples and all(e.text.strip() and all(label.startswith("IPC ") for label in e.labels)
                                    for e in examples)
            assert not labelled or all(e.labels for e in examples)
            assert len({e.id for e in examples}) == len(examples)


VALID_SUBMISSION = (json.dumps({"doc_id": "a", "statute": [
    {"section": "Section 302 IPC", "exact_fact": "He stabbed her.", "reasoning_trace": "why"}]}) + "\n").encode()


@FUZZ
@given(content=st.one_of(st.binary(max_size=200), mutated(VALID_SUBMISSION),
                         st.lists(json_values, max_size=3).map(lambda v: "\n".join(map(json.dumps, v)).encode())))
def test_fire2026_submissions(content):
    from legalft.reporting.fire2026 import validate_file

    with folder_with({"submission.jsonl": content}) as folder:
        path = folder / "submission.jsonl"
        cases = read_or_user_error(lambda: validate_file(path), str(path))
        if cases is not None:
            lines = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
            assert cases == len(lines) and all(set(line) == {"doc_id", "statute"} for line in lines)


def valid_evidence() -> bytes:
    from legalft.data.example import Example
    from legalft.evaluation.evidence import EvidenceSelector

    train = [Example(id=str(i), text=f"He stabbed her on day {i}. The court sat. The court sat again.",
                     labels=("IPC 302",), explanations={"IPC 302": (f"He stabbed her on day {i}.",)}) for i in range(4)]
    return EvidenceSelector.fit(train, ("IPC 302",)).to_json().encode()


@FUZZ
@given(content=st.one_of(st.binary(max_size=200), mutated(valid_evidence()),
                         json_values.map(lambda v: json.dumps(v).encode())))
def test_evidence_scorer_files(content):
    from legalft.evaluation.evidence import EvidenceSelector

    selector = read_or_user_error(lambda: EvidenceSelector.from_json(content.decode("utf-8", "replace"),
                                                                     "evidence.json"), "evidence.json")
    if selector is not None:
        chosen = selector.select("He stabbed her. The court sat.", ["IPC 302"])
        assert all(sentence in "He stabbed her. The court sat." for quotes in chosen.values() for sentence in quotes)


VALID_TSV = b"index\tanswer\ttext\n0\tYes\tHe said she saw it.\n1\tNo\t\"A quoted\ttab\"\n"


@FUZZ
@given(train=st.one_of(mutated(VALID_TSV), st.binary(max_size=200)), test=mutated(VALID_TSV),
       prompt=st.one_of(st.just(b"Q: {{text}}\nA:"), mutated(b"Q: {{text}} {{other}}\nA:"), st.binary(max_size=40)))
@example(train=b"index\tanswer", test=b"index\tanswer", prompt=b"Q: {{text}}\nA:")  # headers alone: no labels
def test_legalbench_task_files(train, test, prompt):
    from legalft.data.legalbench import LegalBenchSource

    with tempfile.TemporaryDirectory() as name:
        folder = write_legalbench_task(Path(name), "hearsay", "", "")
        (folder / "train.tsv").write_bytes(train)
        (folder / "test.tsv").write_bytes(test)
        (folder / "base_prompt.txt").write_bytes(prompt)
        before = files_of(Path(name))
        task = read_or_user_error(lambda: LegalBenchSource(root=name, tasks=["hearsay"]).load_task("hearsay"),
                                  str(folder))
        assert files_of(Path(name)) == before
        if task is not None:
            assert task.spec.labels and all(e.labels[0] in task.spec.labels for e in task.train)


# --- LegalEvalHub records -----------------------------------------------------------------------------------
@FUZZ
@given(task=json_values, run=json_values, presets=json_values, metrics=st.dictionaries(
    st.sampled_from(["balanced_accuracy", "accuracy", "n_samples", "valid_predictions_ratio"]),
    st.floats(allow_nan=True) | st.integers() | st.text(max_size=4), max_size=3))
def test_legalevalhub_records(task, run, presets, metrics):
    from legalft.reporting.legalevalhub import read_hub

    good_task = {"task_id": "hearsay", "metrics": [{"name": "balanced_accuracy"}]}
    files = {"tasks/hearsay.json": json.dumps(good_task).encode(), "tasks/fuzzed.json": json.dumps(task).encode(),
             "eval_runs/hearsay/fuzzed.json": json.dumps(run).encode(),
             "eval_runs/hearsay/metrics.json": json.dumps({"task_id": "hearsay", "model_name": "m",
                                                           "metrics": metrics}).encode(),
             "web/task_presets.json": json.dumps(presets).encode()}
    with folder_with(files) as folder:
        hub = read_hub(folder)  # a bad record is skipped and named, never raised
        for published in hub.runs:
            assert all(0 <= v <= 1 for k, v in published.metrics.items() if k != "n_samples")
        assert all(isinstance(tasks, list) for _, tasks in hub.presets.values())


# --- run folders ------------------------------------------------------------------------------------------
VALID_METRICS = json.dumps({"run": {"method": "classical", "model": "tfidf_logreg", "seed": 0, "metric_mode": "paper",
                                    "comparable": True},
                            "tasks": {"hearsay": {"balanced_accuracy": 0.5, "n": 2, "metric": "balanced_accuracy"}}}).encode()
VALID_PREDICTIONS = b'{"task": "hearsay", "id": "0", "gold": "Yes", "prediction": "No"}\n' \
                    b'{"task": "hearsay", "id": "1", "gold": "No", "prediction": "No"}\n'


@FUZZ
@given(metrics=st.one_of(mutated(VALID_METRICS), json_values.map(lambda v: json.dumps(v).encode())),
       predictions=st.one_of(mutated(VALID_PREDICTIONS), st.binary(max_size=100)))
def test_run_folder_results(metrics, predictions):
    from legalft.reporting.runs import read_run

    with folder_with({"metrics.json": metrics, "predictions.jsonl": predictions}) as folder:
        run = read_or_user_error(lambda: read_run(folder), str(folder))
        if run is not None:
            assert isinstance(run.info, dict) and isinstance(run.tasks, dict)


PREVIOUS_CONFIG = (ROOT / "tests" / "previous_release" / "encoder.yaml").read_bytes()


@FUZZ
@given(config=st.one_of(mutated(PREVIOUS_CONFIG), st.binary(max_size=200),
                        json_values.map(lambda v: json.dumps({"method": v, "seed": 0}).encode()),
                        json_values.map(lambda v: json.dumps({"method": {"_target_":
                                                              "legalft.methods.classical.ClassicalMethod", "C": v}}).encode())))
@example(config=b"method: {_target_: legalft.methods.classical.ClassicalMethod, _target_: os.system}\n")  # a key twice
@example(config=b"method: []\n")
@example(config=b"method:\n")
@example(config=b"method: {_target_: [os.system]}\n")
def test_run_folder_configs(config):
    """What evaluate.py run=DIR reads before anything is built: the folder's config.yaml and its method."""
    from legalft.runs.folder import RunFolder
    from legalft.runs.saved_config import check_rescorable, recorded_method

    with folder_with({"config.yaml": config}) as folder:
        def read():
            check_rescorable(folder)
            return recorded_method(RunFolder(folder))

        method = read_or_user_error(read, str(folder))
        if method is not None:
            assert callable(getattr(method, "rescore", None))


# --- what servers send back ---------------------------------------------------------------------------------
@FUZZ
@given(content=st.one_of(st.binary(max_size=300), mutated(b"SQLite format 3\x00" + bytes(200))))
def test_request_cache_files(content):
    from legalft.llm.server.cache import RequestCache

    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "requests.sqlite"
        path.write_bytes(content)
        cache = read_or_user_error(lambda: RequestCache(path), str(path))
        if cache is not None:
            cache.put("k", "completions", "m", {"choices": []})
            assert cache.get("k") == {"choices": []} and cache.get("other") is None
            cache.close()
            kept = [p for p in Path(name).iterdir() if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm"))]
            assert not kept or kept[0].read_bytes() == content  # what was there is moved aside whole, never lost


class FixedAnswers:
    """A server client that answers every request with ``answer``."""

    base_url = "http://server/v1"

    def __init__(self, answer) -> None:
        self.answer = answer

    def answer_all(self, endpoint, bodies, what):
        return [self.answer for _ in bodies]


choice = st.fixed_dictionaries({}, optional={
    "index": st.integers(0, 3) | json_scalars, "text": json_values, "message": json_values,
    "logprobs": st.fixed_dictionaries({}, optional={
        "token_logprobs": st.lists(st.floats(allow_nan=True) | st.none() | st.text(max_size=2), max_size=12) | json_values,
        "text_offset": st.lists(st.integers(0, 40) | st.none(), max_size=12) | json_values,
        "content": json_values})})


@FUZZ
@given(answer=st.one_of(json_values, st.fixed_dictionaries({"choices": st.lists(choice, max_size=4)})),
       tokenized=st.booleans())
@example(answer=1, tokenized=False)  # choices that are not a list
def test_server_answers(answer, tokenized):
    import numpy as np

    from legalft.llm.server.engine import ServerEngine

    class Tokenizer:  # one token per character
        chat_template = None

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) for c in text]}

    engine = ServerEngine(FixedAnswers(answer if isinstance(answer, dict) else {"choices": answer}), "m",
                          Tokenizer() if tokenized else None)
    for read in (lambda: engine.label_log_likelihoods(["Q: x?\nA:"], ["Yes", "No"]),
                 lambda: engine.generate(["Q: x?\nA:"], max_new_tokens=2),
                 lambda: engine.first_tokens(["Q: x?\nA:"])):
        result = read_or_user_error(read, "http://server/v1")
        if isinstance(result, np.ndarray):
            assert result.shape == (1, 2)
        elif result is not None:
            assert len(result) == 1
