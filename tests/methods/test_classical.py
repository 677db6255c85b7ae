"""method=classical: TF-IDF and a linear classifier per task, scored and written like every method."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import write_legalbench_task
from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError
from legalft.methods.classical import ClassicalMethod

WORDS = {"theft": "the accused stole the wallet and ran", "murder": "the accused killed the victim with a knife",
         "fraud": "the accused forged the cheque and cheated the bank"}


def examples(start: int, n: int, multi: bool = False) -> list[Example]:
    labels = list(WORDS)
    out = []
    for i in range(start, start + n):
        chosen = (labels[i % 3], labels[(i + 1) % 3]) if multi and i % 2 else (labels[i % 3],)
        out.append(Example(id=str(i), text=" and ".join(WORDS[label] for label in chosen) + f" on day {i}",
                           labels=tuple(sorted(chosen))))
    return out


@pytest.mark.parametrize("classifier", ["logreg", "svm"])
@pytest.mark.parametrize("multi", [False, True])
def test_separable_text_is_learnt(classifier, multi):
    spec = TaskSpec(name="crimes", labels=tuple(sorted(WORDS)), multi_label=multi)
    task = Task(spec=spec, train=examples(0, 30, multi), val=examples(30, 9, multi), test=examples(40, 12, multi))
    final = ClassicalMethod(classifier).fitted(task, seed=0)
    probs, thresholds = final.scorer(task.test), final.thresholds
    assert probs.shape == (12, 3) and ((0 <= probs) & (probs <= 1)).all()
    if multi:
        predicted = probs >= thresholds
        gold = np.array([[label in e.labels for label in spec.labels] for e in task.test])
        assert (predicted == gold).all()
    else:
        assert [spec.labels[i] for i in probs.argmax(1)] == [e.labels[0] for e in task.test]


def test_thresholds_are_tuned_out_of_fold_when_the_validation_split_is_too_small_to_choose_on(caplog):
    """A multi-label task whose validation split holds fewer than method.min_choice_docs documents: thresholds tuned
    on 5-fold out-of-fold scores of the training and validation documents, the final model fitted on all of them
    (a word only the validation documents use is learnt); with min_choice_docs=null, as earlier releases did, tuned
    on the validation split, the final model fitted on the training split alone."""
    import logging

    from legalft.evaluation.metrics import tune_thresholds
    from legalft.evaluation.predictions import targets_of

    spec = TaskSpec(name="crimes", labels=tuple(sorted(WORDS)), multi_label=True)
    val = [Example(id=f"v{i}", text=f"the accused embezzled the funds on day {i}", labels=("fraud",)) for i in range(4)]
    task = Task(spec=spec, train=examples(0, 40, multi=True), val=val, test=[])
    unseen = [Example(id="t", text="the accused embezzled the funds", labels=("fraud",))]
    with caplog.at_level(logging.INFO):
        final = ClassicalMethod(min_choice_docs=100).fitted(task, seed=0)
    scores, thresholds = final.scorer, final.thresholds
    pool = task.train + val
    method = ClassicalMethod(min_choice_docs=100)
    held_out = method.out_of_fold(task, pool, method.threshold_folds(pool, 0), 0, folder=None)
    assert thresholds.tolist() == tune_thresholds(held_out, targets_of(pool, spec)).tolist()
    assert "out-of-fold scores of 44 training documents (4 validation documents" in caplog.text
    earlier = ClassicalMethod(min_choice_docs=None).fitted(task, seed=0)
    earlier_scores, earlier_thresholds = earlier.scorer, earlier.thresholds
    assert earlier_thresholds.tolist() == tune_thresholds(earlier_scores(val), targets_of(val, spec)).tolist()
    fraud = spec.labels.index("fraud")
    assert scores(unseen)[0, fraud] > earlier_scores(unseen)[0, fraud] + 0.1  # trained on the validation words too
    enough = ClassicalMethod(min_choice_docs=4).fitted(task, seed=0).thresholds
    assert enough.tolist() == earlier_thresholds.tolist()


def test_only_the_first_max_chars_of_a_document_are_read():
    """What lies past max_chars cannot move a prediction: a test document whose words of another crime
    come after its first 40 characters is read as the crime it starts with."""
    spec = TaskSpec(name="crimes", labels=tuple(sorted(WORDS)), multi_label=False)
    padding = " ".join([WORDS["fraud"]] * 50)
    test = [Example(id="t", text=WORDS["theft"] + " " + padding, labels=("theft",))]
    task = Task(spec=spec, train=examples(0, 30), val=[], test=test)
    from legalft.models.tfidf import TfidfClassifier

    assert TfidfClassifier(max_chars=40).cut([test[0].text]) == [test[0].text[:40]]
    cut = ClassicalMethod(max_chars=40).fitted(task, seed=0).scorer(test)
    whole = ClassicalMethod(max_chars=None).fitted(task, seed=0).scorer(test)
    assert spec.labels[cut.argmax()] == "theft" and spec.labels[whole.argmax()] == "fraud"


def test_a_train_split_with_one_label_predicts_it():
    spec = TaskSpec(name="t", labels=("No", "Yes"), multi_label=False)
    train = [Example(id=str(i), text=f"text {i}", labels=("Yes",)) for i in range(3)]
    task = Task(spec=spec, train=train, test=[Example(id="9", text="other", labels=("No",))])
    probs = ClassicalMethod().fitted(task, seed=0).scorer(task.test)
    assert probs.tolist() == [[0.0, 1.0]]


def test_an_unknown_classifier_is_named():
    with pytest.raises(UserError, match="method.classifier='forest': choose one of logreg, svm"):
        ClassicalMethod("forest")


@pytest.mark.slow
def test_train_rescore_and_report_a_classical_run(tmp_path):
    from commands import run_script

    runs = tmp_path / "runs"
    result = run_script("train.py", "method=classical", "data=proslex_sample", f"hydra.run.dir={runs}/proslex")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((runs / "proslex" / "metrics.json").read_text())
    scores = metrics["tasks"]["proslex_sample"]
    assert metrics["run"]["method"] == "classical" and metrics["run"]["model"] == "tfidf_logreg"
    assert scores["n"] == 35 and scores["macro_f1"] >= 0.6  # keywords separate the sample's statutes
    before = (runs / "proslex" / "predictions.jsonl").read_text()
    rescored = run_script("evaluate.py", f"run={runs / 'proslex'}")  # rebuilt from the recorded method
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert (runs / "proslex" / "predictions.jsonl").read_text() == before

    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\t{'hearsay statement' if i % 2 else 'plain fact'} {i}\n"
                   for i in range(10))
    test_rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\t{'hearsay statement' if i % 2 else 'plain fact'} at {i}\n"
                        for i in range(10))  # numbered from 0 like the train rows, as LegalBench's splits are
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + test_rows)
    write_legalbench_task(root, "rule_qa", "index\tanswer\ttext\n0\tA rule\tq\n", "index\tanswer\ttext\n0\tA rule\tq\n")
    result = run_script("train.py", "method=classical", "method.classifier=svm", "data=legalbench", f"data.root={root}",
                        "data.tasks=[hearsay,rule_qa]", f"hydra.run.dir={runs}/legalbench")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "left out 1 task(s)" in result.stdout + result.stderr  # rule_qa has no fixed label space
    hearsay = json.loads((runs / "legalbench" / "metrics.json").read_text())["tasks"]["hearsay"]
    assert hearsay["metric"] == "balanced_accuracy" and hearsay["balanced_accuracy"] == 1.0
    assert hearsay["category"] == "conclusion"
    trained = json.loads((runs / "legalbench" / "metrics.json").read_text())["run"]
    predictions = (runs / "legalbench" / "predictions.jsonl").read_text()
    rescored = run_script("evaluate.py", f"run={runs / 'legalbench'}")  # the same rows: no overlap, either way
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    again = json.loads((runs / "legalbench" / "metrics.json").read_text())["run"]
    for run in (trained, again):
        assert run["comparable"] is True and "overlap_with_training" not in run, json.dumps(run)
    assert (runs / "legalbench" / "predictions.jsonl").read_text() == predictions
    report = run_script("report.py", f"runs={runs}/*", f"out={tmp_path / 'report'}",
                        "report.resamples=20")
    assert report.returncode == 0, report.stderr[-3000:]
    header = (tmp_path / "report" / "table.md").read_text().splitlines()[0]
    assert "classical tfidf_logreg" in header and "classical tfidf_svm" in header


def test_folds_partition_the_documents_and_keep_every_label_in_every_fold():
    from legalft.evaluation.cross_validation import stratified_folds, summary

    pool = examples(0, 30, multi=True)
    folds = stratified_folds(pool, 5, seed=0)
    held = sorted(i for _, h in folds for i in h)
    assert held == list(range(30))
    for fit, h in folds:
        assert not set(fit) & set(h) and len(fit) + len(h) == 30
        assert {label for i in h for label in pool[i].labels} == set(WORDS)
    assert stratified_folds(pool, 5, seed=0) == folds and stratified_folds(pool, 5, seed=1) != folds
    with pytest.raises(UserError, match="protocol.cv_folds=1: choose between 2 and 30"):
        stratified_folds(pool, 1, seed=0)
    assert summary([{"f1": 0.5, "n": 3}, {"f1": 0.7, "n": 3}]) == {"mean": {"f1": pytest.approx(0.6)},
                                                                  "std": {"f1": pytest.approx(0.1414, abs=1e-4)}}


def test_cross_validation_scores_each_fold_and_tunes_the_final_thresholds_out_of_fold(tmp_path):
    spec = TaskSpec(name="crimes", labels=tuple(sorted(WORDS)), multi_label=True)
    task = Task(spec=spec, train=examples(0, 24, True), val=examples(24, 6, True), test=None)
    thresholds, cv, _ = ClassicalMethod(C=1.0).cross_validate(task, 3, seed=0, folder=tmp_path)
    assert cv["folds"] == 3 and len(cv["per_fold"]) == 3 and sum(f["n"] for f in cv["per_fold"]) == 30
    assert thresholds.shape == (3,) and cv["mean"]["macro_f1"] == pytest.approx(
        np.mean([f["macro_f1"] for f in cv["per_fold"]]))
    # each fold's scores were kept as it ended: a second run reads them and fits nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fold_0.json", "fold_1.json", "fold_2.json"]
    again = ClassicalMethod(C=1.0)
    again.fit = None  # would fail if called
    assert again.cross_validate(task, 3, seed=0, folder=tmp_path)[1] == cv


@pytest.mark.slow
def test_a_cross_validated_classical_run(tmp_path):
    from commands import run_script

    run_dir = tmp_path / "run"
    # data.cv_folds, as sbatch files of earlier releases say it: read as protocol.cv_folds, and said so
    result = run_script("train.py", "method=classical", "data=proslex_sample", "data.cv_folds=3", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "note: data.cv_folds is protocol.cv_folds now" in result.stderr
    cv = json.loads((run_dir / "cv.json").read_text())["proslex_sample"]
    assert cv["folds"] == 3 and sum(f["n"] for f in cv["per_fold"]) == 98 + 35  # train and validation, folded
    assert set(cv["mean"]) == set(cv["std"]) >= {"macro_f1", "micro_f1", "accuracy"}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["cv_folds"] == 3 and metrics["tasks"]["proslex_sample"]["n"] == 35
