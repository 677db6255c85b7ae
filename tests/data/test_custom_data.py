"""data=custom: a user's own CSV, TSV or JSON Lines dataset, read into the one task interface and run
by every method."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from legalft.data.custom import CustomSource
from legalft.data.protocol import Protocol
from legalft.foundation.errors import UserError

EXAMPLE = ROOT / "src" / "legalft" / "samples" / "contract_clauses.csv"  # data/samples/ links here


def test_the_shipped_example_splits_into_stratified_train_validation_and_test():
    (task,) = Protocol(test_fraction=0.25, val_fraction=0.2).applied(CustomSource(train_path=str(EXAMPLE), id_column="id").load(), True)
    assert task.spec.labels == ("confidentiality", "governing law", "indemnification", "termination")
    assert not task.spec.multi_label and task.spec.metric == "balanced_accuracy"
    sizes = len(task.train), len(task.val), len(task.test)
    assert sum(sizes) == 40 and 9 <= sizes[2] <= 11 and 6 <= sizes[1] <= 8
    ids = [e.id for split in (task.train, task.val, task.test) for e in split]
    assert len(set(ids)) == 40
    for split in (task.train, task.val, task.test):
        assert {e.labels[0] for e in split} == set(task.spec.labels)  # stratified: every label on every side


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_csv_tsv_and_json_lines_read_alike(tmp_path, suffix):
    rows = [{"doc": f"d{i}", "facts": f"The accused did thing {i}.", "sections": ["IPC 302", "IPC 201"][: 1 + i % 2]}
            for i in range(12)]
    path = tmp_path / f"train{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        sep = "," if suffix == ".csv" else "\t"
        path.write_text(f"doc{sep}facts{sep}sections\n" + "".join(
            f"{r['doc']}{sep}{r['facts']}{sep}{'|'.join(r['sections'])}\n" for r in rows))
    (task,) = CustomSource(train_path=str(path), text_column="facts", label_column="sections", id_column="doc",
                           multi_label=True, label_separator="|").load()
    assert task.spec.multi_label and task.spec.labels == ("IPC 201", "IPC 302")
    by_id = {e.id: e for e in task.train + task.val}
    assert by_id["d1"].labels == ("IPC 201", "IPC 302") and by_id["d0"].labels == ("IPC 302",)
    assert by_id["d3"].text == "The accused did thing 3." and task.test is None


@pytest.mark.parametrize("content, message", [
    ("text,category\na,x\n", r"no column \['label'\] \(columns: \['category', 'text'\]\)"),
    ("text,label\na,x\n,y\n", r"row 2 \(id 'train-2'\): empty 'text'"),
    ('{"text": "a", "label": ["x", "y"]}\n', r"2 labels \['x', 'y'\], but data.multi_label=false"),
    ("text,label\na,x\nb,y,z\n", r"train.csv: row 2 \(line 3\) has 3 fields where the header has 2"),
    ('{"text": "a", "label": "x"}\n{"text": "b", "label": \n', r"train.jsonl: line 2 is not JSON"),
])
def test_bad_rows_name_the_file_and_what_to_do(tmp_path, content, message):
    path = tmp_path / ("train.jsonl" if content.startswith("{") else "train.csv")
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        CustomSource(train_path=str(path)).load()


def test_a_spreadsheet_csv_with_a_byte_order_mark_reads_as_one_without(tmp_path):
    rows = "".join(f"d{i},Clause {i},{'ab'[i % 2]}\n" for i in range(10))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + f"id,text,label\n{rows}".encode())
    (tmp_path / "plain.csv").write_text(f"id,text,label\n{rows}")
    read = [CustomSource(train_path=str(tmp_path / name), id_column="id").read("train") for name in ("bom.csv", "plain.csv")]
    bom, plain = ([(e.id, e.text, e.labels, e.fields) for e in examples] for examples in read)
    assert bom == plain and bom[0][0] == "d0"


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_a_field_longer_than_the_csv_modules_limit_is_read_whole(tmp_path, suffix):
    sep = "," if suffix == ".csv" else "\t"
    long_text = "The accused was seen near the house. " * 20_000  # 740 KB, over csv's 128 KiB default limit
    path = tmp_path / f"train{suffix}"
    path.write_text(f"text{sep}label\n\"{long_text}\"{sep}a\nshort{sep}b\n")
    examples = CustomSource(train_path=str(path)).read("train")
    assert examples[0].text == long_text.strip() and examples[1].text == "short"


@pytest.mark.parametrize("content", ["", "\n\n", "\ufeff"])
def test_an_empty_file_is_named(tmp_path, content):
    (tmp_path / "train.csv").write_text(content)
    with pytest.raises(UserError, match=r"train.csv: empty file: the first line must name the columns"):
        CustomSource(train_path=str(tmp_path / "train.csv")).load()


@pytest.mark.parametrize("content, message", [
    ("text,label\na,x\nb\n", r"row 2 \(line 3\) has 1 fields where the header has 2"),
    ('text,label\n"a\nb",x\nc,y,z\n', r"row 2 \(line 4\) has 3 fields where the header has 2"),
    ("text,label\n\na,x\n\nb,y,z\n", r"row 2 \(line 5\) has 3 fields"),
    ("text,text\na,x\n", r"the header names \['text'\] more than once"),
    ("text,,label\na,x,y\n", r"header column 2 has no name"),
])
def test_a_ragged_row_is_named_by_its_row_and_line_with_its_own_field_count(tmp_path, content, message):
    (tmp_path / "train.csv").write_text(content)
    with pytest.raises(UserError, match=message):
        CustomSource(train_path=str(tmp_path / "train.csv")).read("train")


def test_json_lines_keep_line_separators_inside_strings(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"text": "first\u2028second\x1c", "label": "a"}, ensure_ascii=False) + "\n")
    (example,) = CustomSource(train_path=str(path)).read("train")
    assert example.text == "first\u2028second\x1c".strip()


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_json_list_label_cells_are_read_as_lists(tmp_path, suffix):
    import csv

    path = tmp_path / f"train{suffix}"
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="," if suffix == ".csv" else "\t")
        writer.writerow(["id", "text", "label"])
        for i in range(12):
            writer.writerow([f"d{i}", f"Clause {i}.", json.dumps(["a", "b", "c", "d"][: 1 + i % 4])])
    (task,) = CustomSource(train_path=str(path), id_column="id", multi_label=True).load()
    assert task.spec.labels == ("a", "b", "c", "d")
    assert {e.id: e.labels for e in task.train + task.val}["d3"] == ("a", "b", "c", "d")


@pytest.mark.parametrize("cell, message", [
    ('["a", "b"', r"train.csv row 1 \(id 'train-1'\): column 'label' starts like a JSON list but is not one"),
    ('[["a"], "b"]', r"row 1 .*holds a nested list"),
])
def test_a_malformed_json_list_cell_is_named(tmp_path, cell, message):
    import csv

    path = tmp_path / "train.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([["text", "label"], ["Clause.", cell]])
    with pytest.raises(UserError, match=message):
        CustomSource(train_path=str(path), multi_label=True).load()


def test_a_quoted_tsv_field_reads_as_legalbench_reads_it(tmp_path):
    from legalft.data.legalbench import read_tsv

    path = tmp_path / "train.tsv"
    path.write_text('index\ttext\tlabel\tanswer\n0\t"The ""notice"" clause"\tx\tYes\n1\t"Quoted" start\ty\tNo\n')
    rows = CustomSource(train_path=str(path), multi_label=False).read("train")
    assert [e.text for e in rows] == ['The "notice" clause', "Quoted start"]
    assert [r["text"] for r in read_tsv(path)] == [e.text for e in rows]


def test_a_test_label_never_trained_on_is_refused(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"t{i},a\nu{i},b\n" for i in range(5)))
    (tmp_path / "test.csv").write_text("text,label\nv,c\n")
    with pytest.raises(UserError, match=r"labels \['c'\] occur in the validation or test data but never in"):
        CustomSource(train_path=str(tmp_path / "train.csv"), test_path=str(tmp_path / "test.csv")).load()


def test_a_missing_or_unknown_file_is_named(tmp_path):
    with pytest.raises(UserError, match=r"data.train_path: .*nothing.csv is not a file"):
        CustomSource(train_path=str(tmp_path / "nothing.csv")).load()
    (tmp_path / "train.xlsx").write_text("x")
    with pytest.raises(UserError, match=r"neither .csv, .tsv nor .jsonl"):
        CustomSource(train_path=str(tmp_path / "train.xlsx")).load()


@pytest.mark.slow
def test_every_method_runs_on_the_example_and_the_report_holds_them(tmp_path, tiny_bert_dir, tiny_causal_lm_dir):
    from commands import run_script, run_scripts
    from helpers import FAST_MODEL

    data = ["data=custom", f"data.train_path={EXAMPLE}", "data.id_column=id", "protocol.test_fraction=0.25"]
    runs = tmp_path / "runs"
    results = run_scripts(
        ("train.py", *data, f"model.pretrained={tiny_bert_dir}", *FAST_MODEL, "trainer.max_epochs=2",
         f"hydra.run.dir={runs}/encoder"),
        ("evaluate.py", "prompt=zero_shot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}", *data,
         "prompt.answer=score", f"hydra.run.dir={runs}/incontext"),
        ("train.py", "experiment=legalbench_lora", *data, f"model.pretrained={tiny_causal_lm_dir}",
         "trainer.max_epochs=1", f"hydra.run.dir={runs}/lora"),
        ("train.py", "method=classical", *data, f"hydra.run.dir={runs}/classical"),
    )
    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
    (task,) = Protocol(test_fraction=0.25).applied(CustomSource(train_path=str(EXAMPLE), id_column="id").load(), True)
    for method in ("encoder", "incontext", "lora", "classical"):
        metrics = json.loads((runs / method / "metrics.json").read_text())
        scores = metrics["tasks"]["custom"]
        assert scores["n"] == len(task.test) and 0 <= scores["balanced_accuracy"] <= 1 and scores["category"] == "custom"
        assert metrics["run"]["method"] == method
    trained = ("encoder", "lora", "classical")  # every trained custom-data run rescores to the same numbers
    scored = {method: json.loads((runs / method / "metrics.json").read_text())["tasks"] for method in trained}
    for method, result in zip(trained, run_scripts(*[("evaluate.py", f"run={runs / m}") for m in trained])):
        assert result.returncode == 0, result.stderr[-3000:]
        before = scored[method]
        after = json.loads((runs / method / "metrics.json").read_text())["tasks"]["custom"]
        assert {k: (before["custom"].get(k), after.get(k)) for k in before["custom"].keys() | after.keys()
                if before["custom"].get(k) != after.get(k)} == {}, method
    report = run_script("report.py", f"runs={runs}/*", f"out={tmp_path / 'report'}",
                        "report.resamples=20")
    assert report.returncode == 0, report.stderr[-3000:]
    header = (tmp_path / "report" / "table.md").read_text().splitlines()[0]
    assert "encoder minilm" in header and "lora smollm2 pooled" in header and "incontext smollm2 zero_shot" in header
    assert "classical tfidf_logreg" in header


@pytest.mark.slow
def test_multilabel_data_is_prompted_in_its_own_labels_in_context_and_for_lora(tmp_path, tiny_causal_lm_dir):
    from commands import run_script

    from legalft.methods.lora.fitting import training_examples

    rows = [{"id": f"c{i}", "text": f"Clause {i}: the party shall keep it secret and may end it.",
             "label": [["confidentiality"], ["termination"], ["confidentiality", "termination"]][i % 3]}
            for i in range(24)]
    path = tmp_path / "clauses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = ["data=custom", f"data.train_path={path}", "data.id_column=id", "data.multi_label=true",
            "protocol.test_fraction=0.25"]
    runs = tmp_path / "runs"
    result = run_script("evaluate.py", "prompt=zero_shot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
                        *data, "prompt.max_new_tokens=4", f"hydra.run.dir={runs}/incontext")
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads((runs / "incontext" / "metrics.json").read_text())["tasks"]["custom"]
    assert scores["n"] == 6 and set(scores["per_label"]) == {"confidentiality", "termination"}
    result = run_script("evaluate.py", "prompt=knn", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
                        *data, f"hydra.run.dir={runs}/fewshot")
    assert result.returncode == 2 and "custom has none: use prompt=zero_shot" in result.stderr
    assert not (runs / "fewshot").exists()

    from omegaconf import OmegaConf

    from legalft.models.pretrained import load_tokenizer

    tokenizer = load_tokenizer(str(tiny_causal_lm_dir))
    (task,) = CustomSource(train_path=str(path), id_column="id", multi_label=True).load()
    (example, *_) = training_examples([task], tokenizer, chat=False, max_length=10_000,
                                      prompt_cfg=OmegaConf.create({"explain": False, "max_input_words": 100}))
    text = tokenizer.decode(example.input_ids)
    assert "list the labels that apply" in text and "Indian Penal Code" not in text
    assert text.endswith(f"Labels: {', '.join(task.train[0].labels)}{tokenizer.eos_token}")
