"""LoRA runs end to end: train then evaluate, exports merged into their base, PROSLEX sections with explanations,
cross-validation that a requeue resumes, k-fold over test, run folders of older versions, model cards, rescoring
that loads the base once, W&B artifacts."""

from __future__ import annotations

import json
import os

import pytest
import torch
from helpers import read_jsonl

from commands import run_script
from conftest import write_legalbench_task


@pytest.mark.slow
def test_train_then_evaluate_a_lora_run(tmp_path, tiny_causal_lm_dir):
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(8))
    tests = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(20, 30))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)
    write_legalbench_task(root, "proa", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)
    run_dir = tmp_path / "run"
    common = [f"model.pretrained={tiny_causal_lm_dir}", f"data.root={root}", "data.tasks=[hearsay,proa]"]
    result = run_script("train.py", "experiment=legalbench_lora", *common, "method.regime=leave_one_out",
                        "method.heldout=hearsay", "trainer.max_epochs=2", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    console = result.stdout + result.stderr
    assert "FutureWarning" not in console and "\r" not in console  # no deprecation notices, no bars in a log
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["method"] == "lora" and metrics["run"]["regime"] == "leave_one_out"
    assert list(metrics["tasks"]) == ["hearsay"] and metrics["tasks"]["hearsay"]["adapter"] == "without_hearsay"
    assert metrics["tasks"]["hearsay"]["invalid_outputs"] == 0 and metrics["tasks"]["hearsay"]["n"] == 10
    assert (run_dir / "adapters" / "without_hearsay" / "adapter_config.json").exists()
    card = (run_dir / "adapters" / "without_hearsay" / "README.md").read_text()  # not PEFT's blank template
    assert "trained by legalft (`method=lora`) on the train splits of: proa." in card
    assert "More Information Needed" not in card and "base_model:" not in card  # a local base names no hub model
    before = read_jsonl(run_dir / "predictions.jsonl")
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == before
    # predict.py on the test documents without their labels: the adapter that scored hearsay, the same answers
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": r["id"], "text": f"statement number {r['id']}"}) + "\n" for r in before))
    result = run_script("predict.py", f"run={run_dir}", f"input={cases}", f"out={tmp_path / 'answers.jsonl'}")
    assert result.returncode == 0, result.stderr[-3000:]
    answers = read_jsonl(tmp_path / "answers.jsonl")
    assert [(a["id"], a["prediction"], a.get("raw")) for a in answers] == \
        [(r["id"], r["prediction"], r.get("raw")) for r in before]
    # a run folder written before methods were named and the prompt group was renamed, with the adapter
    # plan in the data config and the optimiser in the lora group, still rescores (docs/run-folders.md)
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    method = config.pop("method")
    assert method.pop("_target_") == "legalft.methods.lora.method.LoraMethod"
    config["data"].update({key: method.pop(key) for key in ("regime", "heldout", "folds")})
    config["data"]["tasks"] = ["proa"]  # the held-out task was loaded besides data.tasks
    config["lora"].update(method)
    config["incontext"] = config.pop("prompt")
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == before

    # an adapter swapped for a pickle that runs code when loaded
    import torch

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'owned'}",))

    adapter = run_dir / "adapters" / "without_hearsay"
    (adapter / "adapter_model.safetensors").unlink()
    torch.save({"evil": Payload()}, adapter / "adapter_model.bin")
    scored = (run_dir / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 2 and "this file holds code, not weights: it was not loaded" in result.stderr
    assert "weights_only=False" not in result.stdout + result.stderr and not (tmp_path / "owned").exists()
    assert (run_dir / "metrics.json").read_text() == scored


def fake_lora_run(run_dir, pretrained: str, tokenizer_source) -> None:
    """A finished run folder as train.py leaves it, with an untrained adapter (LoRA's B starts at zero)."""
    from omegaconf import OmegaConf

    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import add_lora

    model, tokenizer = load_causal_lm(pretrained)
    adapter = run_dir / "adapters" / "pooled"
    add_lora(model, 4, 8, 0.0, ["q_proj", "v_proj"], False, False).save_pretrained(adapter)
    tokenizer.save_pretrained(adapter)
    OmegaConf.save({"seed": 0, "method": {"_target_": "legalft.methods.lora.method.LoraMethod"},
                    "model": {"pretrained": pretrained, "dtype": "float32", "pad_token": None},
                    "lora": {"quantize": "none"}}, run_dir / "config.yaml")
    (run_dir / "label_spaces.json").write_text(json.dumps({"pooled": {"hearsay": ["No", "Yes"]}}))
    (run_dir / "metrics.json").write_text(json.dumps({"run": {"method": "lora", "model": "tiny"}, "tasks": {
        "hearsay": {"metric": "balanced_accuracy", "balanced_accuracy": 0.5, "n": 10, "adapter": "pooled"}}}))
    return model, tokenizer


def test_export_merges_and_refuses_another_base(tmp_path, tiny_causal_lm_dir):
    from legalft.foundation.errors import UserError
    from legalft.export import export
    from legalft.llm.answers import label_log_likelihoods
    from legalft.models.causal_lm import load_causal_lm

    fake_lora_run(tmp_path / "run", str(tiny_causal_lm_dir), None)
    out = export(str(tmp_path / "run"), str(tmp_path / "merged"))
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    assert json.loads((out / "label_spaces.json").read_text())["tasks"] == {"hearsay": ["No", "Yes"]}
    assert not (out / "legalft.json").exists()  # a model that answers prompts: nothing beyond transformers
    card = (out / "README.md").read_text()
    assert "library_name: transformers" in card and "pipeline_tag: text-generation" in card
    assert "AutoModelForCausalLM.from_pretrained" in card
    merged, tokenizer = load_causal_lm(str(out))
    base, _ = load_causal_lm(str(tiny_causal_lm_dir))
    prompt = "Q: statement number 3\nAnswer:"
    torch.testing.assert_close(label_log_likelihoods(merged, tokenizer, [prompt], ["Yes", "No"]),
                               label_log_likelihoods(base, tokenizer, [prompt], ["Yes", "No"]))
    with pytest.raises(UserError, match="exists: choose a new folder"):
        export(str(tmp_path / "run"), str(out))
    with pytest.raises(UserError, match=r"adapter=other: the run trained no adapter of that name \(it has pooled\)"):
        export(str(tmp_path / "run"), str(tmp_path / "merged3"), adapter="other")
    config = (tmp_path / "run" / "config.yaml")
    config.write_text(config.read_text().replace(str(tiny_causal_lm_dir), str(tmp_path / "other_base")))
    with pytest.raises(UserError, match="this adapter was trained on .*set model.pretrained to the adapter's base"):
        export(str(tmp_path / "run"), str(tmp_path / "deeper" / "merged2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged", "run"]  # nothing left of the failed exports


@pytest.mark.slow
def test_export_works_for_the_gguf_loaded_offline_model(tmp_path):
    from legalft.export import export
    from legalft.models.causal_lm import offline_smollm2_gguf

    fake_lora_run(tmp_path / "run", offline_smollm2_gguf(), None)
    out = export(str(tmp_path / "run"), str(tmp_path / "merged"))
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert sum(p.stat().st_size for p in out.glob("*.safetensors")) > 200_000_000  # 135M weights, dequantised


@pytest.mark.slow
def test_proslex_lora_writes_sections_and_explanations(tmp_path, tiny_causal_lm_dir):
    """explain=json, the answer form FIRE 2026 asks for (explain=true's text form shares all but its format and
    parser, unit-tested in test_incontext_answers.py)."""
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py", "experiment=proslex_lora", "data=proslex_sample", f"model.pretrained={tiny_causal_lm_dir}",
        "model.max_length=256", "prompt.explain=json", "prompt.max_input_words=60", "prompt.max_new_tokens=8",
        "trainer.max_epochs=1", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    scores = metrics["tasks"]["proslex_sample"]
    assert metrics["run"]["method"] == "lora" and scores["n"] == 35 and "macro_f1" in scores and "explanations" in scores
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert all(isinstance(r["gold"], list) and "explanations" in r and "reasoning" in r for r in records)
    assert "invalid_json_items" in scores  # 8 tokens of a tiny model: mostly unreadable, and counted as such
    # each quote located in the facts or counted as not there; each predicted section without one counted
    quotes = sum(len(r["evidence"]) for r in records)
    assert scores["evidence_quotes"] == quotes == scores["evidence_exact"] + scores["evidence_normalized"] + \
        scores["evidence_not_in_facts"]
    assert scores["evidence_missing"] == sum(len(r["prediction"]) for r in records) - quotes
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == records
    # predict.py on the same documents without their labels: the same sections, generations and quotes
    from conftest import ROOT

    facts = {key: doc["fact"] for f in sorted((ROOT / "src/legalft/samples/proslex_sample/Test").glob("*.json"))
             for key, doc in json.loads(f.read_text()).items()}
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": r["id"], "text": facts[r["id"]]}) + "\n" for r in records[:6]))
    result = run_script("predict.py", f"run={run_dir}", f"input={cases}", f"out={tmp_path / 'answers.jsonl'}")
    assert result.returncode == 0, result.stderr[-3000:]
    answers = read_jsonl(tmp_path / "answers.jsonl")
    assert [(a["prediction"], a["raw"], a.get("evidence", {})) for a in answers] == \
        [(r["prediction"], r["raw"], r["evidence"]) for r in records[:6]]


def test_a_cross_validated_run_folds_one_task():
    from legalft.data.example import Task, TaskSpec
    from legalft.foundation.errors import UserError
    from legalft.methods.lora.cross_validation import task_to_fold

    tasks = [Task(TaskSpec(name, ("Yes", "No"), multi_label=False), [], None) for name in ("hearsay", "proa")]
    assert task_to_fold(tasks[:1], "pooled") is tasks[0]
    with pytest.raises(UserError, match="one adapter on one task .*2 task"):
        task_to_fold(tasks, "pooled")
    with pytest.raises(UserError, match="method.regime=leave_one_out"):
        task_to_fold(tasks[:1], "leave_one_out")


@pytest.mark.slow
def test_a_cross_validated_lora_run_scores_every_document_out_of_fold_and_a_requeue_retrains_nothing(
        tmp_path, tiny_causal_lm_dir):
    run_dir = tmp_path / "run"
    args = ["train.py", "experiment=proslex_lora", "data=proslex_sample", "protocol.cv_folds=2",
            f"model.pretrained={tiny_causal_lm_dir}", "model.max_length=128", "prompt.max_input_words=30",
            "prompt.max_new_tokens=6", "trainer.max_epochs=1", f"hydra.run.dir={run_dir}"]
    result = run_script(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    cv = json.loads((run_dir / "cv.json").read_text())["proslex_sample"]
    assert cv["folds"] == 2 and sum(f["n"] for f in cv["per_fold"]) == 98 + 35  # train and validation, folded
    assert cv["mean"]["macro_f1"] == pytest.approx(sum(f["macro_f1"] for f in cv["per_fold"]) / 2)
    folds = [json.loads((run_dir / "checkpoints" / "cv" / f"fold_{k}.json").read_text()) for k in range(2)]
    assert len({i for fold in folds for i in fold["ids"]}) == 98 + 35  # each document held out once
    assert sorted(p.name for p in (run_dir / "checkpoints" / "cv").iterdir()) == [
        "fold_0.json", "fold_1.json"]  # a fold's weights go once it is scored
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["cv_folds"] == 2 and metrics["tasks"]["proslex_sample"]["n"] == 35
    assert "fold 2 of 2: training on" in result.stderr + result.stdout

    records = read_jsonl(run_dir / "predictions.jsonl")
    result = run_script(*args)  # a requeued job: folds and adapter read back, scored again
    assert result.returncode == 0, result.stderr[-3000:]
    assert "fold 2 of 2: scores read from" in result.stderr + result.stdout
    assert "already trained" in result.stderr + result.stdout
    assert read_jsonl(run_dir / "predictions.jsonl") == records


@pytest.mark.slow
def test_kfold_over_test_regime_scores_every_test_row_once_and_is_marked(tmp_path, tiny_causal_lm_dir):
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(4))
    tests = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(20, 30))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)
    run_dir = tmp_path / "run"
    result = run_script("train.py", "experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}",
                        f"data.root={root}", "data.tasks=[hearsay]", "method.regime=kfold_test", "method.folds=2",
                        "trainer.max_epochs=1", "logger=none", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["regime"] == "kfold_test" and metrics["run"]["comparable"] is False
    assert metrics["tasks"]["hearsay"]["n"] == 10 and metrics["tasks"]["hearsay"]["folds"] == 2
    predictions = read_jsonl(run_dir / "predictions.jsonl")
    assert sorted(r["id"] for r in predictions) == sorted(str(i) for i in range(20, 30))
    assert sorted(p.name for p in (run_dir / "adapters").iterdir()) == ["hearsay_fold0", "hearsay_fold1"]
    result = run_script("evaluate.py", f"run={run_dir}")  # rescoring finds the fold adapters
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == predictions


def test_a_run_folders_prompt_settings_read_back_with_what_older_versions_lacked(tmp_path):
    import yaml

    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder

    (tmp_path / "adapters").mkdir()  # a LoRA run folder of a release that did not record its method

    def prompt_read_from(saved: dict):
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({"seed": 0, "data": {}, "model": {}, **saved}))
        return RunContext.for_saved_run(RunFolder(tmp_path), {}).prompt

    # written before the prompt group was renamed and before score_split and explain existed
    old = prompt_read_from({"incontext": {"strategy": "zero_shot", "answer": "score"}})
    assert old.strategy == "zero_shot" and old.answer == "score"
    assert old.score_split == "test" and old.explain is False
    current = prompt_read_from({"prompt": {"strategy": "zero_shot", "explain": True, "score_split": "train"}})
    assert current.explain is True and current.score_split == "train"


def test_an_adapters_model_card_names_its_hub_base_and_tasks(tmp_path):
    from legalft.methods.lora.adapters import model_card

    card = model_card("pooled", "meta-llama/Meta-Llama-3-8B-Instruct", ["hearsay", "proa"])
    assert card.startswith("---\nlibrary_name: peft\nbase_model: meta-llama/Meta-Llama-3-8B-Instruct\n")
    assert "on the train splits of: hearsay, proa." in card
    assert "base_model:" not in model_card("pooled", str(tmp_path), ["hearsay"])  # a local folder
    assert "- Base model: local folder " in model_card("pooled", str(tmp_path), ["hearsay"])
    gguf = tmp_path / "SmolLM2-135M-Instruct.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    scored = model_card("pooled", str(gguf), ["hearsay"], {"hearsay": {"n": 8, "metric": "balanced_accuracy",
                                                                        "balanced_accuracy": 0.75, "adapter": "pooled"}},
                        "0123456789abcdef", "python train.py experiment=legalbench_lora")
    assert "- Base model: local GGUF file SmolLM2-135M-Instruct.Q8_0.gguf" in scored
    assert "| hearsay | balanced_accuracy | 0.750 | 8 |" in scored and "`0123456789abcdef`" in scored
    assert "- Made by: `python train.py experiment=legalbench_lora`" in scored and "- Method: lora" in scored


def test_rescoring_loads_the_base_once_and_scores_each_adapter_as_if_loaded_alone(tmp_path, tiny_causal_lm_dir,
                                                                                  monkeypatch):
    import torch
    from omegaconf import OmegaConf

    from legalft.methods.lora import adapters as adapter_files
    from legalft.methods.lora import scoring
    from legalft.methods.lora.plan import Adapter
    from legalft.methods.lora.scoring import SwitchedAdapters
    from legalft.models.lora import add_lora
    from legalft.runs.folder import RunFolder

    model, tokenizer = fake_lora_run(tmp_path, str(tiny_causal_lm_dir), None)
    for name, seed in (("hearsay", 1), ("proa", 2)):  # two adapters with weights of their own
        torch.manual_seed(seed)
        adapted = add_lora(type(model).from_pretrained(tiny_causal_lm_dir), 4, 8, 0.0, ["q_proj", "v_proj"], False, False)
        for parameter in (p for n, p in adapted.named_parameters() if "lora_B" in n):
            torch.nn.init.normal_(parameter, std=0.5)
        adapted.save_pretrained(tmp_path / "adapters" / name)
    monkeypatch.setattr(scoring, "_loaded", None)  # no base kept from an earlier test in this process
    loads = []
    load_base = adapter_files.load_base
    monkeypatch.setattr(adapter_files, "load_base", lambda *a: loads.append(a) or load_base(*a))
    cfg = OmegaConf.load(tmp_path / "config.yaml")
    switched = SwitchedAdapters(RunFolder(tmp_path), cfg.model, cfg.lora.quantize)
    prompts, labels = ["Q: statement number 3\nA:", "Q: statement number 8\nA:"], ["Yes", "No"]
    for name in ("hearsay", "proa", "pooled"):
        scores = switched.engine_for(Adapter(name, [], [])).label_log_likelihoods(prompts, labels)
        alone, _ = adapter_files.load_adapter(cfg.model, cfg.lora, tmp_path / "adapters" / name)
        from legalft.llm.engine import LocalEngine

        assert scores == pytest.approx(LocalEngine(alone, tokenizer).label_log_likelihoods(prompts, labels), abs=1e-5)
    assert len(loads) == 1 + 3  # the switched side's one, and one per adapter loaded alone
    assert list(switched.model.peft_config) == ["pooled"]  # one adapter in memory at a time


@pytest.mark.slow
def test_rescoring_several_lora_runs_in_one_command_loads_their_base_once(tmp_path, tiny_causal_lm_dir):
    """evaluate.py -m run=A,B: each run rescored in its own folder, the second on the base the first loaded
    (commands of their own: what one process keeps loaded is the subject)."""
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(6))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    import shutil

    runs = [tmp_path / "first", tmp_path / "second"]
    result = run_script("train.py", "experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}",
                        f"data.root={root}", "data.tasks=[hearsay]", "trainer.max_epochs=1", "logger=none",
                        f"hydra.run.dir={runs[0]}", process=True)
    assert result.returncode == 0, result.stderr[-3000:]
    shutil.copytree(runs[0], runs[1])  # a second run on the same base (its own folder, the same adapter name)
    trained = [read_jsonl(run_dir / "predictions.jsonl") for run_dir in runs]
    card = (runs[0] / "adapters" / "pooled" / "README.md").read_text()  # completed once the run scored
    fingerprint = json.loads((runs[0] / "metrics.json").read_text())["run"]["data_fingerprint"]
    assert "| hearsay | balanced_accuracy |" in card and f"`{fingerprint}`" in card
    assert "- Made by: `python train.py experiment=legalbench_lora" in card
    result = run_script("evaluate.py", "-m", f"run={runs[0]},{runs[1]}", process=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [read_jsonl(run_dir / "predictions.jsonl") for run_dir in runs] == trained
    assert (runs[0] / "adapters" / "pooled" / "README.md").read_text() == card  # rescoring leaves it as it was
    first, second = ((run_dir / "evaluate.log").read_text() for run_dir in runs)
    assert "loading the base model" in first and "switched in on the base model already loaded" not in first
    assert "loading the base model" not in second and "adapter pooled: switched in on the base model" in second


@pytest.mark.slow
def test_a_lora_run_with_log_model_uploads_its_adapters_as_a_wandb_artifact(tmp_path, tiny_causal_lm_dir):
    from helpers import wandb_records

    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(4))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    run_dir = tmp_path / "run"
    result = run_script("train.py", "experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}",
                        f"data.root={root}", "data.tasks=[hearsay]", "trainer.max_epochs=1", "logger=wandb",
                        "logger.wandb.offline=false", "logger.wandb.log_model=true", f"hydra.run.dir={run_dir}",
                        env={"WANDB_MODE": "offline"})  # W&B's offline mode records the upload in the run's files
    assert result.returncode == 0, result.stderr[-3000:]
    artifacts = [r.artifact for r in wandb_records(run_dir) if r.WhichOneof("record_type") == "artifact"]
    adapters = [a for a in artifacts if a.name.startswith("adapters-")]
    assert len(adapters) == 1 and adapters[0].type == "model"
    assert json.loads(adapters[0].metadata)["method"] == "lora"
    uploaded = {entry.path for entry in adapters[0].manifest.contents}
