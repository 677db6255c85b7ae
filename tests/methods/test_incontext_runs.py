"""In-context runs end to end on a tiny causal LM: the shared run files, predict.py answering as the run scored, bad
tasks and demonstrations refused before the model loads, PROSLEX sections and their demonstrations, W&B offline,
prompt settings tuned on the train split."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import read_jsonl
from helpers import wandb_records

from commands import run_script
from conftest import ROOT, write_legalbench_task


@pytest.fixture(scope="module")
def legalbench_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("legalbench")
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(6))
    tests = "".join(f"{i}\t{'Yes' if i % 3 else 'No'}\tnew statement {i}\n" for i in range(10, 19))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests,
                          prompt="Q: statement number 1\nA: Yes\n\nQ: {{text}}\nA:")
    write_legalbench_task(
        root, "ssla_plaintiff", "index\tanswer\ttext\n0\tAcme Corp\tAcme Corp sued.\n1\tJohn Smith\tJohn Smith sued.\n",
        "index\tanswer\ttext\n5\tBeta LLC\tBeta LLC sued.\n6\tJane Doe,Bob Roe\tJane Doe and Bob Roe sued.\n",
    )
    return root


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["score", "generate"])
def test_incontext_run_writes_the_shared_files(tmp_path, tiny_causal_lm_dir, legalbench_root, answer):
    from legalft.evaluation.metrics import legalbench_scores

    run_dir = tmp_path / "run"
    result = run_script(
        "evaluate.py", "prompt=base_prompt", f"prompt.answer={answer}", "model=smollm2",
        f"model.pretrained={tiny_causal_lm_dir}", "data=legalbench", f"data.root={legalbench_root}",
        "data.tasks=[hearsay,ssla_plaintiff]", "prompt.max_new_tokens=4", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["method"] == "incontext" and metrics["run"]["answer"] == answer
    assert metrics["run"]["metric_mode"] == "paper" and (run_dir / "config.yaml").exists()
    hearsay, ssla = metrics["tasks"]["hearsay"], metrics["tasks"]["ssla_plaintiff"]
    assert hearsay["n"] == 9 and ssla["n"] == 2 and hearsay["category"] == "conclusion"
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert [r["task"] for r in records] == ["hearsay"] * 9 + ["ssla_plaintiff"] * 2
    hearsay_records = records[:9]
    if answer == "score":
        assert hearsay["invalid_outputs"] == 0 and all(r["prediction"] in ("Yes", "No") for r in hearsay_records)
        assert all("raw" not in r for r in hearsay_records)
        for r in hearsay_records:  # each label's log-likelihood is kept, and the prediction is the likeliest
            assert set(r["scores"]) == {"Yes", "No"} and all(v < 0 for v in r["scores"].values())
            assert r["prediction"] == max(r["scores"], key=r["scores"].get)
    else:
        assert hearsay["invalid_outputs"] == sum(r["prediction"] not in ("Yes", "No") for r in hearsay_records)
        assert all("raw" in r and "scores" not in r for r in hearsay_records)
    # the file's numbers are the metrics module's numbers on the file's predictions
    recomputed = legalbench_scores("hearsay", "balanced_accuracy", [r["gold"] for r in hearsay_records],
                                   [r.get("raw", r["prediction"]) for r in hearsay_records])
    assert hearsay["balanced_accuracy"] == pytest.approx(recomputed["balanced_accuracy"])
    assert_predict_answers_as_the_run_scored(run_dir, hearsay_records, tmp_path)


def assert_predict_answers_as_the_run_scored(run_dir, scored, tmp_path):
    """predict.py on the test documents given without labels: the run's own prompt, model and answers; a server
    that is not there is one line and status 2, nothing written."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": r["id"], "text": f"new statement {r['id']}"}) + "\n" for r in scored))
    out = tmp_path / "answers.jsonl"
    result = run_script("predict.py", f"run={run_dir}", "task=hearsay", f"input={cases}", f"out={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    answers = read_jsonl(out)
    assert [a["id"] for a in answers] == [r["id"] for r in scored]
    for answer, record in zip(answers, scored):
        assert answer.get("raw") == record.get("raw") and answer.get("label_scores") == record.get("scores")
        if record["prediction"] in ("Yes", "No"):  # read strictly by the run; predict.py reads flexibly after
            assert answer["prediction"] == record["prediction"]
    unreachable = tmp_path / "unreachable.jsonl"
    result = run_script("predict.py", f"run={run_dir}", "task=hearsay", f"input={cases}", f"out={unreachable}",
                        "engine=server", "engine.base_url=http://127.0.0.1:9/v1", "engine.max_retries=0",
                        "engine.model=tiny")
    assert result.returncode == 2 and "engine.base_url=http://127.0.0.1:9/v1: no answer" in result.stderr
    assert "Traceback" not in result.stderr and not unreachable.exists()


@pytest.mark.slow
def test_incontext_bad_task_leaves_no_run_folder(tmp_path, tiny_causal_lm_dir, legalbench_root):
    run_dir = tmp_path / "run"
    result = run_script("evaluate.py", "prompt=zero_shot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
                        "data=legalbench", f"data.root={legalbench_root}", "data.tasks=[hearsey]", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2 and "Did you mean 'hearsay'" in result.stderr
    assert not run_dir.exists()


@pytest.mark.slow
def test_more_demonstrations_than_train_rows_is_refused_before_the_model_loads(tmp_path, legalbench_root):
    run_dir = tmp_path / "run"
    result = run_script("evaluate.py", "prompt=zero_shot", "prompt.strategy=few_shot", "prompt.k=7", "model=smollm2",
                        "model.pretrained=/nonexistent/model", "data=legalbench", f"data.root={legalbench_root}",
                        "data.tasks=[hearsay]", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2 and "prompt.k=7: more demonstrations than train rows in hearsay (6)" in result.stderr
    assert not run_dir.exists()  # and the model (a path that does not exist) was never loaded


def test_proslex_answers_are_parsed_into_sections():
    from legalft.data.example import TaskSpec
    from legalft.llm.label_set_prompts import parse_labels

    task = TaskSpec("proslex", ("IPC 147", "IPC 302", "IPC 498A"), True, statutes=True)
    assert parse_labels("IPC 302, IPC 498a", task) == ["IPC 302", "IPC 498A"]
    assert parse_labels("Sections 147 and 302 apply.", task) == ["IPC 147", "IPC 302"]
    assert parse_labels("none of them; 1302 or 30", task) == []


def test_other_multilabel_tasks_are_prompted_and_read_by_label_name():
    from legalft.data.example import Example, TaskSpec
    from legalft.llm.label_set_prompts import build_prompts, format_answer, parse_explanations, parse_labels

    task = TaskSpec("contracts", ("breach", "force majeure", "negligence"), True, {"breach": "a term was broken"})
    (prompt,), _ = build_prompts(task, [Example("t", "The supplier never delivered.", ("breach",))],
                                 [("goods never came", "breach")], max_words=100, explain=True)
    assert "Indian Penal Code" not in prompt and "Sections" not in prompt
    assert "- breach: a term was broken\n- force majeure\n- negligence\n" in prompt
    assert "Text: goods never came\nLabels: breach" in prompt
    assert prompt.endswith("Text: The supplier never delivered.\nLabels:")
    assert parse_labels("Force Majeure, breach.", task) == ["breach", "force majeure"]
    assert parse_labels("majeure; negligent", task) == []  # a label counts only when named whole
    parties = TaskSpec("parties", ("Smith, Jones", "Smith", "a b"), True)
    assert parse_labels("Smith, Jones; a, b", parties) == ["Smith, Jones", "Smith"]
    example = Example("d", "text", ("breach", "negligence"), {"breach": ("never delivered",)})
    answer = format_answer(example, explain=True)
    assert parse_labels(answer, task) == ["breach", "negligence"]
    assert parse_explanations(answer, task) == {"breach": "never delivered"}


def test_proslex_demonstrations_are_the_spans_closest_to_each_statute():
    import numpy as np

    from legalft.data.example import Example, TaskSpec
    from legalft.llm.label_set_prompts import build_prompts, representative_spans

    task = TaskSpec("proslex", ("IPC 147", "IPC 302"), True, {"IPC 147": "rioting", "IPC 302": "murder"}, statutes=True)
    train = [
        Example("a", "x", ("IPC 147",), {"IPC 147": ("a mob rioting", "a quiet walk")}),
        Example("b", "y", ("IPC 302",), {"IPC 302": ("he was murder ed", "rain fell")}),
    ]
    vocabulary = ["riot", "murder"]

    def embed(texts):  # one dimension per keyword: similarity counts shared keywords
        return np.array([[float(w in t) for w in vocabulary] + [0.1] for t in texts])

    demos = representative_spans(task, train, 1, embed)
    assert demos == [("a mob rioting", "IPC 147"), ("he was murder ed", "IPC 302")]
    (prompt,), cut = build_prompts(task, [Example("t", "one two three four", ("IPC 302",))], demos, max_words=3)
    assert cut == 1 and prompt.endswith("Facts: one two three\nSections:")
    assert "- IPC 147: rioting" in prompt and "Facts: a mob rioting\nSections: 147" in prompt


@pytest.mark.slow
def test_proslex_incontext_run(tmp_path, tiny_causal_lm_dir):
    run_dir = tmp_path / "run"
    result = run_script(
        "evaluate.py", "prompt=proslex_fewshot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
        "data=proslex_sample", "prompt.max_new_tokens=6", "prompt.max_input_words=60", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads((run_dir / "metrics.json").read_text())["tasks"]["proslex_sample"]
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert scores["n"] == 35 == len(records) and set(scores["per_label"]) >= {"IPC 302", "IPC 498A"}
    assert scores["invalid_outputs"] == sum(not r["prediction"] for r in records)
    assert all(isinstance(r["gold"], list) and "raw" in r for r in records)


@pytest.mark.slow
def test_a_zero_shot_proslex_run_reads_only_the_split_it_scores(tmp_path, tiny_causal_lm_dir):
    """A zero-shot prompt draws on no train row, so a folder of documents to score is all the run needs."""
    run_dir = tmp_path / "run"
    test_folder = ROOT / "src" / "legalft" / "samples" / "proslex_sample" / "Test"
    result = run_script(
        "evaluate.py", "prompt=proslex_zeroshot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
        "data=proslex", f"data.root={tmp_path / 'no_dataset_here'}", f"data.test_path={test_folder}",
        "prompt.max_new_tokens=6", "prompt.max_input_words=60", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((run_dir / "metrics.json").read_text())["tasks"]["proslex"]["n"] == 35
    few_shot = run_script(
        "evaluate.py", "prompt=proslex_fewshot", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
        "data=proslex", f"data.root={tmp_path / 'no_dataset_here'}", f"data.test_path={test_folder}",
        f"hydra.run.dir={tmp_path / 'few_shot'}",
    )
    assert few_shot.returncode != 0 and "no_dataset_here is not a folder" in few_shot.stderr  # demonstrations need train


def test_explained_answers_round_trip_and_are_scored_with_rouge_and_bleu():
    from legalft.data.example import Example, TaskSpec
    from legalft.evaluation.explanations import explanation_scores
    from legalft.llm.label_set_prompts import format_answer, parse_explanations, parse_labels

    task = TaskSpec("proslex", ("IPC 201", "IPC 302"), True, statutes=True)
    example = Example("d", "facts", ("IPC 201", "IPC 302"),
                      {"IPC 302": ("he struck him with an axe",), "IPC 201": ("the body was thrown in the canal",)})
    answer = format_answer(example, explain=True)
    assert answer == "IPC 201, IPC 302 | IPC 201: the body was thrown in the canal | IPC 302: he struck him with an axe"
    assert parse_labels(answer, task) == ["IPC 201", "IPC 302"]  # "302" inside a quote would not count twice
    assert parse_explanations(answer, task) == {"IPC 201": "the body was thrown in the canal", "IPC 302": "he struck him with an axe"}
    assert format_answer(example, explain=False) == "IPC 201, IPC 302"

    same = explanation_scores(["he struck him with an axe"], ["he struck him with an axe"])
    assert same["rouge1_f"] == same["rouge2_f"] == same["rougeL_f"] == 1.0 and same["bleu"] == pytest.approx(1.0)
    disjoint = explanation_scores(["rain fell today"], ["he struck him"])
    assert disjoint["rouge1_f"] == 0.0 and disjoint["bleu"] == 0.0
    # "he struck" of "he struck him": unigram P 2/2, R 2/3 -> F 0.8; bigram P 1/1, R 1/2 -> F 2/3
    partial = explanation_scores(["he struck"], ["he struck him"])
    assert partial["rouge1_f"] == pytest.approx(0.8) and partial["rouge2_f"] == pytest.approx(2 / 3)


@pytest.mark.slow
def test_an_incontext_run_logs_to_wandb_offline_under_the_fine_tuned_keys(tmp_path, tiny_causal_lm_dir,
                                                                          legalbench_root):
    run_dir = tmp_path / "run"
    env_key = "0123456789abcdef0123456789abcdef01234567"
    result = subprocess.run(
        [sys.executable, "evaluate.py", "prompt=base_prompt", "prompt.answer=score", "model=smollm2",
         f"model.pretrained={tiny_causal_lm_dir}", "data=legalbench", f"data.root={legalbench_root}",
         "data.tasks=[hearsay]", "logger=wandb", f"hydra.run.dir={run_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        # a key, and a W&B server that cannot be reached (a closed loopback port): offline at once, said once
        env={**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_API_KEY": env_key, "WANDB_BASE_URL": "http://127.0.0.1:9"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (result.stdout + result.stderr).count("W&B's server cannot be reached from here") == 1
    history, config, job_types, composed, tags, order = set(), set(), set(), {}, set(), []
    for record in wandb_records(run_dir):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            job_types.add(record.run.job_type)
            tags |= set(record.run.tags)
        if kind == "history":  # a key with slashes is stored split into its parts
            keys = {item.key or "/".join(item.nested_key) for item in record.history.item}
            history |= keys
            order += sorted(keys)
        if kind == "config":
            config |= {item.key for item in record.config.update}
            composed.update({item.key: json.loads(item.value_json) for item in record.config.update
                             if item.key == "config"})
    assert {"test/hearsay/balanced_accuracy", "test/hearsay/n", "test/category/conclusion"} <= history
    assert "predictions/nrows" in history  # the predictions table
    assert job_types == {"evaluate"}  # W&B tells scoring runs from training runs (train.py's are "train")
    assert tags == {"evaluate", "method:incontext", "data:legalbench", "model:smollm2", "prompt:base_prompt"}
    # open while it scores: the progress is logged before the results
    assert order.index("progress/rows_done") < order.index("test/hearsay/balanced_accuracy")
    assert {"method", "model", "prompt", "k", "selection", "answer", "metric_mode"} <= config
    composed = composed["config"]  # the run as composed, beside its record
    assert composed["data"]["tasks"] == ["hearsay"] and composed["prompt"]["max_new_tokens"] == 16
    assert composed["prompt"]["chat_template"] is False and "limit" in composed["protocol"]
    assert (run_dir / "wandb_run_id").exists()  # a rescoring of this folder logs to the same W&B run
    for path in run_dir.rglob("*"):  # the API key reaches no file
        if path.is_file():
            assert env_key.encode() not in path.read_bytes(), path


def test_prompts_for_train_rows_never_show_the_row_itself():
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.llm.prompts import PromptBuilder

    train = [Example(id=str(i), text=f"statement {i}", labels=("Yes" if i % 2 else "No",),
                     fields={"text": f"statement {i}"}) for i in range(5)]
    task = Task(spec=TaskSpec(name="hearsay", labels=("No", "Yes"), multi_label=False), train=train, test=train)
    prompts = PromptBuilder("few_shot", k=4, selection="random", seed=0, exclude_scored=True).build(task, train)
    for example, prompt in zip(train, prompts):
        shown = prompt.split("\n\n")[1:-1]  # the demonstrations, between the instruction and the query
        assert len(shown) == 4 and not any(f"{example.text}\n" in block for block in shown)
    leaky = PromptBuilder("few_shot", k=4, selection="random", seed=0).build(task, train)  # a test row's view
    assert any(f"{e.text}\n" in block for e, p in zip(train, leaky) for block in p.split("\n\n")[1:-1])


@pytest.mark.slow
def test_prompt_settings_are_tuned_on_the_train_split_by_an_optuna_sweep(tmp_path, tiny_causal_lm_dir,
                                                                         legalbench_root):
    import sqlite3

    common = ["model=smollm2", f"model.pretrained={tiny_causal_lm_dir}", "data=legalbench",
              f"data.root={legalbench_root}", "data.tasks=[hearsay]", "prompt.answer=score"]
    run_dir = tmp_path / "one"
    one = run_script("evaluate.py", "prompt=zero_shot", "prompt.strategy=few_shot",
                     "prompt.k=2", "prompt.score_split=train", *common, f"hydra.run.dir={run_dir}")
    assert one.returncode == 0, one.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["scored_on"] == "train" and metrics["run"]["comparable"] is False
    assert metrics["tasks"]["hearsay"]["n"] == 6  # the train rows, not the 9 test rows
    base = run_script("evaluate.py", "prompt=base_prompt", "prompt.score_split=train", *common,
                      f"hydra.run.dir={tmp_path / 'base'}")
    assert base.returncode == 2 and "base prompts are built from the train rows" in base.stderr

    sweep = run_script("evaluate.py", "-m", "hparams_search=incontext_optuna", "prompt=zero_shot", *common,
                       "optimized_metric=train/hearsay/balanced_accuracy", "hydra.sweeper.n_trials=2",
                       f"paths.checkpoints_dir={tmp_path}",
                       f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    with sqlite3.connect(tmp_path / "incontext_optuna.db") as db:
        values = db.execute("SELECT value FROM trial_values").fetchall()
    assert len(values) == 2 and all(0 <= v <= 1 for (v,) in values)  # each trial returned its train score
