"""``method=setfit``: SetFit's pairs, its contrastive stage, and runs on LegalBench-format tasks."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from conftest import write_legalbench_task


def test_pairs_pair_each_example_with_one_that_shares_a_label_and_one_that_shares_none():
    from legalft.models.contrastive import contrastive_pairs

    labels = [frozenset(s) for s in (["a"], ["a"], ["b"], ["b", "c"], ["c"])]
    pairs = contrastive_pairs(labels, iterations=3, rng=np.random.default_rng(0))
    assert len(pairs) == 3 * 5 * 2  # every example has a partner of each kind here
    for i, j, target in pairs:
        assert (target == 1.0) == bool(labels[i] & labels[j])
        assert i != j  # partners exist for all five, so none is paired with itself
    assert pairs == contrastive_pairs(labels, 3, np.random.default_rng(0))
    assert pairs != contrastive_pairs(labels, 3, np.random.default_rng(1))
    lone = contrastive_pairs([frozenset("a"), frozenset("b")], 1, np.random.default_rng(0))
    assert lone == [(0, 0, 1.0), (0, 1, 0.0), (1, 1, 1.0), (1, 0, 0.0)]  # alone with its label: itself
    assert contrastive_pairs([frozenset("a")] * 2, 1, np.random.default_rng(0)) == [(0, 1, 1.0), (1, 0, 1.0)]


WORDS = {"Yes": "the witness repeated what another person said out of court",
         "No": "the defendant testified about what he saw himself"}


def legalbench_rows(n: int) -> str:
    return "index\tanswer\ttext\n" + "".join(f"{i}\t{a}\t{WORDS[a]} case {i}\n" for i in range(n) for a in ("Yes", "No"))


@pytest.mark.slow
def test_contrastive_training_draws_same_label_examples_together(tiny_bert_dir, caplog):
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.kit.features import features_of
    from legalft.methods.setfit import SetFitMethod

    train = [Example(id=f"{a}{i}", text=f"{WORDS[a]} case {i}", labels=(a,), fields={"text": f"{WORDS[a]} case {i}"})
             for i in range(4) for a in ("Yes", "No")]
    task = Task(spec=TaskSpec(name="t", labels=("No", "Yes"), multi_label=False), train=train, test=None)

    def separation(iterations: int) -> float:
        method = SetFitMethod(pretrained=str(tiny_bert_dir), iterations=iterations, epochs=3, lr=1e-3)
        texts = features_of(task, train)
        embedder = method.train_embedder(texts, [frozenset(e.labels) for e in train], seed=0)
        similarity = (lambda e: e @ e.T)(method.embed(embedder, texts))
        same = np.array([[a.labels == b.labels for b in train] for a in train])
        return similarity[same & ~np.eye(len(train), dtype=bool)].mean() - similarity[~same].mean()

    with caplog.at_level(logging.INFO, logger="legalft.foundation.loop_progress"):
        assert separation(20) > separation(0) + 0.2
    assert "epoch 3/3: batch" in caplog.text  # its training says how far it is, as every training run does


@pytest.mark.slow
def test_a_setfit_run_on_legalbench_tasks_scores_and_rescores_the_same(tmp_path, tiny_bert_dir):
    from commands import run_script

    root = tmp_path / "legalbench"
    write_legalbench_task(root, "hearsay", legalbench_rows(4), legalbench_rows(10))
    write_legalbench_task(root, "rule_qa", "index\tanswer\ttext\n0\tA rule\tq\n", "index\tanswer\ttext\n0\tA rule\tq\n")
    run_dir = tmp_path / "run"
    result = run_script("train.py", "method=setfit", "data=legalbench", f"data.root={root}", "data.tasks=[hearsay,rule_qa]",
                        f"model.pretrained={tiny_bert_dir}", "method.lr=1e-3", "method.epochs=3",
                        f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "left out 1 task(s)" in result.stdout + result.stderr  # rule_qa has no fixed label space
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["method"] == "setfit" and metrics["run"]["model"] == "minilm"
    hearsay = metrics["tasks"]["hearsay"]
    assert hearsay["metric"] == "balanced_accuracy" and hearsay["n"] == 20 and hearsay["balanced_accuracy"] >= 0.9
    before = (run_dir / "predictions.jsonl").read_text()
    rescored = run_script("evaluate.py", f"run={run_dir}")
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert (run_dir / "predictions.jsonl").read_text() == before  # fitted again, seeded: the same scores
    assert_the_export_loads_in_setfit_and_scores_as_the_run(run_dir, tmp_path)


def assert_the_export_loads_in_setfit_and_scores_as_the_run(run_dir, tmp_path):
    """legalft.export of a SetFit run: setfit's own format, which SetFitModel.from_pretrained loads in a process
    that imports nothing of this project, with the run's scores; predict.py names the run folder for it."""
    import os
    import subprocess
    import sys

    from conftest import ROOT
    from commands import run_script

    out = tmp_path / "exported"
    exported = subprocess.run([sys.executable, "-m", "legalft.export", f"run={run_dir}", f"out={out}"], cwd=ROOT,
                              capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert exported.returncode == 0, exported.stderr[-3000:]
    texts = [f"{WORDS['Yes']} case 99", f"{WORDS['No']} case 98"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    predicted = run_script("predict.py", f"run={run_dir}", f"input={cases}", f"out={tmp_path / 'p.jsonl'}")
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    ours = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    script = ("import json, sys\nfrom setfit import SetFitModel\n"
              f"model = SetFitModel.from_pretrained({str(out)!r})\n"
              "texts = json.loads(sys.stdin.read())\n"
              "print(json.dumps({'probs': model.predict_proba(texts).tolist(), 'labels': model.labels,\n"
              "                  'legalft': [m for m in sys.modules if m.startswith('legalft')]}))\n")
    loaded = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True,
                            timeout=600, cwd=out.parent, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    theirs = json.loads(loaded.stdout.splitlines()[-1])
    assert theirs["legalft"] == [] and theirs["labels"] == ["No", "Yes"]
    for record, probs in zip(ours, theirs["probs"]):
        assert [record["scores"][label] for label in ("No", "Yes")] == pytest.approx(probs, abs=1e-4)
    refused = run_script("predict.py", f"run={out}", f"input={cases}")
    assert refused.returncode == 2 and f"predict.py run={run_dir.resolve()}" in refused.stderr
