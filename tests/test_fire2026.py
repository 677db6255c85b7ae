"""FIRE 2026 Task 1: its JSON Lines read as a statute task (malformed lines named), PROSLEX converted to it,
and a run's predictions and evidence written as a submission that validates, whole or not at all."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from conftest import SAMPLE
from legalft.data.protocol import Protocol
from legalft.data.fire2026 import Fire2026Source, convert_proslex, read_file, section_label, section_text
from legalft.errors import UserError
from legalft.reporting.fire2026 import submission_lines, validate_file, validation_problems


@pytest.mark.parametrize("text, label", [
    ("Section 302 IPC", "IPC 302"), ("section 302 of the IPC", "IPC 302"), ("S. 498-A IPC", "IPC 498A"),
    ("IPC 498A", "IPC 498A"), ("Sec. 34 Indian Penal Code, 1860", "IPC 34"), ("302 I.P.C.", "IPC 302"),
    ("IPC Section 120B", "IPC 120B"), ("Section 3 Dowry Prohibition Act", None), ("Section 302 CrPC", None),
    ("murder", None),
])
def test_sections_are_read_into_the_projects_labels(text, label):
    assert section_label(text) == label
    if label:
        assert section_label(section_text(label)) == label


def test_a_label_that_is_no_ipc_section_has_no_submission_spelling():
    with pytest.raises(UserError, match="label 'Yes' is not an IPC section"):
        section_text("Yes")


def case(doc_id: str, fact: str, *sections: tuple[str, str]) -> dict:
    return {"doc_id": doc_id, "doc_url": f"https://example.org/{doc_id}", "fact": fact,
            "statute": [{"section": s, "exact_fact": quote, "reasoning_trace": "because"} for s, quote in sections]}


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_a_training_file_gives_the_open_set_of_sections_and_their_evidence(tmp_path, caplog):
    path = write_lines(tmp_path / "train.jsonl", [
        case("a", "He stabbed her. She died.", ("Section 302 IPC", "He stabbed her."), ("Section 34 IPC", "")),
        case("b", "He cheated the bank.", ("Section 420 IPC", "He cheated the bank."),
             ("Section 3 Dowry Prohibition Act", "x")),
        case("c", "Only another act.", ("Section 3 Dowry Prohibition Act", "x")),
    ])
    with caplog.at_level(logging.WARNING):
        examples = read_file(path, labelled=True, unknown_sections="drop_label")
    assert [(e.id, e.labels) for e in examples] == [("a", ("IPC 34", "IPC 302")), ("b", ("IPC 420",))]
    assert examples[0].explanations == {"IPC 302": ("He stabbed her.",)}  # an empty exact_fact is no evidence
    assert "'Section 3 Dowry Prohibition Act' x2 (line(s) 2, 3)" in caplog.text
    assert [e.id for e in read_file(path, labelled=True, unknown_sections="drop_document")] == ["a"]
    with pytest.raises(UserError, match=r"train.jsonl: section\(s\) that name no IPC section: 'Section 3 Dowry"):
        read_file(path, labelled=True, unknown_sections="error")


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2 is not JSON"),
    ('["a list"]', "line 2 is a list, not an object"),
    ({"doc_id": "b", "fact": "x"}, "line 2 has no 'statute'"),
    ({"doc_id": "", "fact": "x", "statute": []}, "line 2: 'doc_id' must be non-empty text"),
    ({"doc_id": "b", "fact": "  ", "statute": []}, "line 2: 'fact' must be non-empty text"),
    ({"doc_id": "a", "fact": "x", "statute": []}, "line 2: doc_id 'a' is also on line 1"),
    ({"doc_id": "b", "fact": "x", "statute": "Section 302 IPC"}, "line 2: 'statute' must be a list of objects"),
    ({"doc_id": "b", "fact": "x", "statute": [{"exact_fact": "x"}]}, "line 2, statute 1: 'section' must be"),
    ({"doc_id": "b", "fact": "x", "statute": [{"section": "Section 302 IPC", "exact_fact": 3}]},
     "line 2, statute 1: 'exact_fact' must be text"),
])
def test_a_malformed_line_is_named(tmp_path, line, message):
    path = write_lines(tmp_path / "train.jsonl", [case("a", "He stabbed her.", ("Section 302 IPC", "")), line])
    with pytest.raises(UserError, match=message):
        read_file(path, labelled=True, unknown_sections="drop_label")


def test_the_task_reads_train_validation_and_an_unlabelled_test_file(tmp_path, caplog):
    train = write_lines(tmp_path / "train.jsonl", [
        case(str(i), f"Case {i}. He {'stabbed' if i % 2 else 'cheated'} someone.",
             ("Section 302 IPC" if i % 2 else "Section 420 IPC", "")) for i in range(20)])
    test = write_lines(tmp_path / "test.jsonl", [{"doc_id": "t1", "doc_url": "", "fact": "He stabbed someone."},
                                                 {"doc_id": "t2", "doc_url": "", "fact": "He cheated."}])
    with caplog.at_level(logging.WARNING):
        (task,) = Protocol(val_fraction=0.2).applied(Fire2026Source(str(train), str(test)).load(), True)
    assert task.spec.labels == ("IPC 302", "IPC 420") and task.spec.statutes and task.spec.multi_label
    assert len(task.train) + len(task.val) == 20 and task.val
    assert [(e.id, e.labels) for e in task.test] == [("t1", ()), ("t2", ())]
    assert "has no gold sections" in caplog.text and "report=fire2026" in caplog.text
    labelled_test = write_lines(tmp_path / "dev.jsonl", [case("d", "x", ("Section 302 IPC", ""),
                                                              ("Section 376 IPC", ""))])
    (task,) = Fire2026Source(str(train), str(labelled_test)).load_test()
    assert task.test[0].labels == ("IPC 302",)  # IPC 376: named by no training case, reported and left out
    leaked = write_lines(tmp_path / "leak.jsonl", [{"doc_id": "3", "doc_url": "", "fact": "Case 3 again."}])
    with pytest.raises(UserError, match="document '3' is in both the train and the test split"):
        Fire2026Source(str(train), str(leaked), val_path=str(labelled_test)).load()


def test_proslex_converts_to_fire_and_reads_back_the_same(tmp_path):
    import yaml

    from conftest import ROOT
    from legalft.data.proslex import ProslexSource

    label_map = yaml.safe_load((ROOT / "conf" / "data" / "proslex.yaml").read_text())["label_map"]
    (proslex,) = ProslexSource(label_map, root=str(SAMPLE)).load()
    written = convert_proslex(SAMPLE / "Test", tmp_path / "test.jsonl")
    assert written == {tmp_path / "test.jsonl": len(proslex.test)}
    fire = read_file(tmp_path / "test.jsonl", labelled=True, unknown_sections="error")
    assert [(e.id, e.text, e.labels) for e in fire] == [(e.id, e.text, e.labels) for e in proslex.test]
    assert all(f.explanations == {k: (" ".join(v),) for k, v in p.explanations.items()}
               for f, p in zip(fire, proslex.test))
    with pytest.raises(UserError, match="test.jsonl exists: choose a new file"):
        convert_proslex(SAMPLE / "Test", tmp_path / "test.jsonl")
    split = convert_proslex(SAMPLE / "Train", tmp_path / "train.jsonl", facts_only=True, test_out=tmp_path / "held.jsonl")
    held, kept = split[tmp_path / "held.jsonl"], split[tmp_path / "train.jsonl"]
    assert kept + held == 98 and 0.15 * 98 < held < 0.25 * 98  # stratified over the label sets, about a fifth
    assert all("statute" in json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines())
    assert all(set(json.loads(line)) == {"doc_id", "doc_url", "fact"}
               for line in (tmp_path / "held.jsonl").read_text().splitlines())


def test_submission_lines_carry_each_sections_evidence_and_reasoning():
    records = [{"id": "a", "prediction": ["IPC 302"], "scores": {"IPC 302": 0.91, "IPC 420": 0.1},
                "evidence": {"IPC 302": ["He stabbed her.", "She died."]}},
               {"id": "b", "prediction": ["IPC 420"], "explanations": {"IPC 420": "He cheated."},
                "evidence": {"IPC 420": ["He cheated."]}},
               {"id": "c", "prediction": []}]
    lines = submission_lines(records, {"IPC 302": "Punishment for murder"}, "encoder minilm")
    assert lines[0] == {"doc_id": "a", "statute": [{
        "section": "Section 302 IPC", "exact_fact": "He stabbed her. She died.",
        "reasoning_trace": "encoder minilm gives Section 302 IPC (Punishment for murder) a score of 0.91, at or above "
                           "its decision threshold; the quoted sentences are those of the facts that a scorer trained "
                           "on experts' evidence calls evidence for it."}]}
    assert "quotes this passage of the facts" in lines[1]["statute"][0]["reasoning_trace"]
    assert lines[2] == {"doc_id": "c", "statute": []}
    assert validation_problems(list(enumerate(lines, 1)), ["a", "b", "c"]) == []
    with pytest.raises(UserError, match="predicts one label"):
        submission_lines([{"id": "x", "prediction": "Yes"}], {}, "run")


@pytest.mark.parametrize("line, problem", [
    ({"doc_id": "a"}, "line 1: an object with exactly ['doc_id', 'statute']"),
    ({"doc_id": "a", "statute": [{"section": "IPC 302", "exact_fact": "", "reasoning_trace": ""}]},
     "section 'IPC 302' is not 'Section <n> IPC'"),
    ({"doc_id": "a", "statute": [{"section": "Section 302 IPC", "exact_fact": ""}]}, "statute 1: an object with exactly"),
    ({"doc_id": "a", "statute": [{"section": "Section 302 IPC", "exact_fact": "", "reasoning_trace": ""}] * 2},
     "a section is listed twice"),
    ({"doc_id": "z", "statute": []}, "1 test case(s) missing, e.g. ['a']; 1 doc_id(s) that the test file does not hold"),
])
def test_a_submission_that_does_not_fit_the_format_is_named(line, problem):
    assert problem in "; ".join(validation_problems([(1, line)], ["a"]))


def test_a_classical_run_on_fire_data_becomes_a_validated_submission(tmp_path):
    from commands import run_script

    convert_proslex(SAMPLE / "Train", tmp_path / "train.jsonl")
    convert_proslex(SAMPLE / "Test", tmp_path / "test.jsonl", facts_only=True)
    run = tmp_path / "run"
    result = run_script("train.py", "method=classical", "data=fire2026", f"data.train_path={tmp_path}/train.jsonl",
                        f"data.test_path={tmp_path}/test.jsonl", "explanations.bertscore_model=null",
                        f"hydra.run.dir={run}")
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert all(set(r["evidence"]) == set(r["prediction"]) for r in records if r["prediction"])
    scores = json.loads((run / "metrics.json").read_text())["tasks"]["fire2026"]
    assert scores["evidence_quotes"] == scores["evidence_exact"] > 0 and scores["evidence_sections_scored"] == 0

    out = tmp_path / "submission.jsonl"
    report = run_script("report.py", "report=fire2026", f"runs={run}", f"out={out}",
                        f"report.test_path={tmp_path}/test.jsonl")
    assert report.returncode == 0, report.stderr[-3000:]
    assert validate_file(out, str(tmp_path / "test.jsonl")) == 35
    first = json.loads(out.read_text().splitlines()[0])
    facts = {r["doc_id"]: r["fact"] for r in map(json.loads, (tmp_path / "test.jsonl").read_text().splitlines())}
    assert all(s["exact_fact"] and s["exact_fact"].split(". ")[0] in facts[first["doc_id"]] for s in first["statute"])
    again = run_script("report.py", "report=fire2026", f"runs={run}", f"out={out}")
    assert again.returncode == 2 and "exists: choose a new file" in again.stderr
    other = write_lines(tmp_path / "other_test.jsonl", [{"doc_id": "elsewhere", "doc_url": "", "fact": "x"}])
    refused = run_script("report.py", "report=fire2026", f"runs={run}", f"out={tmp_path}/second.jsonl",
                         f"report.test_path={other}")
    assert refused.returncode == 2 and "would not validate" in refused.stderr and "35 doc_id(s)" in refused.stderr
    assert not (tmp_path / "second.jsonl").exists()  # whole or not at all
