"""LoRA / QLoRA fine-tuning of causal LMs on LegalBench train splits, scored on the test splits by
the same runner and metrics as in-context baselines."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from legalft.data.legalbench import LegalBenchTask
from legalft.errors import UserError
from legalft.evaluation import run_results
from legalft.io import atomic_write_json
from legalft.incontext.answers import use_chat_template
from legalft.incontext.prompts import PromptBuilder
from legalft.run_folder import RunFolder, instantiate_from_run

log = logging.getLogger(__name__)


def load_base(cfg: DictConfig, quantize: bool = True):
    """The run's base model, 4-bit when the run is QLoRA (``quantize=False`` for merging and export)."""
    import torch

    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import quantization_config

    compute = "bfloat16" if torch.cuda.is_available() else "float32"
    return load_causal_lm(
        cfg.model.pretrained, dtype=cfg.model.get("dtype", "float32"), pad_token=cfg.model.get("pad_token"),
        quantization_config=quantization_config(cfg.lora.quantize, compute) if quantize else None, require_pad=True,
    )


def training_examples(tasks: list[LegalBenchTask], tokenizer, chat: bool, max_length: int):
    from legalft.data.instruction_data import report_cuts, tokenize_example

    builder = PromptBuilder("zero_shot")
    examples, names = [], []
    for task in tasks:
        for example, prompt in zip(task.train, builder.build(task, task.train)):
            examples.append(tokenize_example(tokenizer, prompt, example.labels[0], chat, max_length))
            names.append(f"{task.spec.name}/{example.id}")
    report_cuts(examples, names, max_length)
    return examples


def score_tasks(tasks: list[LegalBenchTask], model, tokenizer, cfg: DictConfig) -> tuple[dict, list[dict]]:
    from legalft.incontext.runner import legalbench_incontext

    chat = use_chat_template(tokenizer, cfg.incontext.chat_template)
    return legalbench_incontext(tasks, model.eval(), tokenizer, cfg.incontext, chat, PromptBuilder("zero_shot"),
                                cfg.metric_mode)


def score_adapter(adapter: str, tasks: list[LegalBenchTask], model, tokenizer, cfg: DictConfig) -> tuple[dict, list[dict]]:
    """Scores of the tasks that have a test split, each marked with the adapter that produced it."""
    scores, records = score_tasks([t for t in tasks if t.test], model, tokenizer, cfg)
    for task_scores in scores.values():
        task_scores["adapter"] = adapter
    return scores, records


def new_adapter(cfg: DictConfig):
    """(peft model, tokenizer, whether prompts use the chat template) for one adapter to train."""
    from legalft.models.lora import add_lora, trainable_share

    model, tokenizer = load_base(cfg)
    lora = cfg.lora
    model = add_lora(model, lora.r, lora.alpha, lora.dropout, list(lora.target_modules),
                     cfg.model.get("gradient_checkpointing", False), quantized=lora.quantize not in (None, "none"))
    log.info("%.2f%% of the model's weights are trainable", 100 * trainable_share(model))
    return model, tokenizer, use_chat_template(tokenizer, cfg.incontext.chat_template)


def fit_and_save(cfg: DictConfig, run: RunFolder, name: str, model, tokenizer, examples) -> dict[str, float]:
    """Train one adapter, resumable: checkpoints (adapter weights and optimizer state only) go to
    checkpoints/<name>/, and a rerun or requeued job continues from the last one."""
    from hydra.utils import instantiate
    from lightning.pytorch.callbacks import ModelCheckpoint

    from legalft.checkpoint_io import checkpoint_to_resume, trainer_plugins
    from legalft.data.instruction_data import InstructionDataModule
    from legalft.models.lora import CausalLMModule
    from legalft.preemption import PreemptionCheckpoint

    lora = cfg.lora
    module = CausalLMModule(model, lr=lora.lr, weight_decay=lora.weight_decay, warmup_ratio=lora.warmup_ratio)
    checkpoints = run.checkpoints / name
    loggers = [instantiate(c) for c in (cfg.get("logger") or {}).values()]
    callbacks = [  # per adapter, so built here rather than from conf/callbacks
        ModelCheckpoint(dirpath=checkpoints, filename="last", save_top_k=1, enable_version_counter=False),  # each epoch
        PreemptionCheckpoint(str(checkpoints / "last.ckpt")),
    ]
    trainer = instantiate(cfg.trainer, logger=loggers or False, callbacks=callbacks, plugins=trainer_plugins(),
                          default_root_dir=str(checkpoints))
    resume = checkpoint_to_resume([checkpoints / "last.ckpt"])
    if resume:
        log.info("adapter %s: resuming from %s", name, resume)
    datamodule = InstructionDataModule(examples, tokenizer.pad_token_id, cfg.datamodule.batch_size, seed=cfg.seed,
                                       packing=cfg.datamodule.get("packing", False))
    trainer.fit(module, datamodule=datamodule, ckpt_path=resume)
    with gathered_adapter(trainer, model):
        if trainer.is_global_zero:
            folder = run.path / "adapters" / name
            model.save_pretrained(folder)  # the adapter's weights only
            tokenizer.save_pretrained(folder)
    trainer.strategy.barrier()
    return {key: float(value) for key, value in trainer.callback_metrics.items()}


def is_global_zero() -> bool:
    """Whether this process scores and writes results: in a distributed run, every rank trains and
    rank 0 alone does the rest (Lightning sets the rank when training starts)."""
    from lightning.fabric.utilities.rank_zero import rank_zero_only

    return getattr(rank_zero_only, "rank", 0) == 0


def gathered_adapter(trainer, model):
    """ZeRO-3 leaves each rank a shard of every weight: gather the adapter's whole before saving it."""
    from contextlib import nullcontext

    from lightning.pytorch.strategies import DeepSpeedStrategy

    if isinstance(trainer.strategy, DeepSpeedStrategy) and trainer.strategy.zero_stage_3:
        import deepspeed

        return deepspeed.zero.GatheredParameters([p for p in model.parameters() if p.requires_grad])
    return nullcontext()


def trained_adapter(cfg: DictConfig, run: RunFolder, name: str):
    """An adapter this run already finished (before a requeue), loaded instead of trained again."""
    folder = run.path / "adapters" / name
    if not (folder / "adapter_config.json").exists():
        return None
    log.info("adapter %s: already trained, loading %s", name, folder)
    model, tokenizer = load_adapter(cfg, folder)
    return model, tokenizer


def adapter_for(cfg: DictConfig, run: RunFolder, name: str, examples_for):
    """(model, tokenizer, chat, training metrics) of adapter ``name``: loaded when this run already
    saved it (before a requeue), else trained on ``examples_for(tokenizer, chat)``."""
    import lightning as L

    L.seed_everything(cfg.seed, workers=True)
    done = trained_adapter(cfg, run, name)
    if done:
        model, tokenizer = done
        return model, tokenizer, use_chat_template(tokenizer, cfg.incontext.chat_template), []
    model, tokenizer, chat = new_adapter(cfg)
    return model, tokenizer, chat, [fit_and_save(cfg, run, name, model, tokenizer, examples_for(tokenizer, chat))]


def all_test_examples(tasks: dict[str, LegalBenchTask]):
    return [e for t in tasks.values() if t.test for e in t.test]


def train_lora(cfg: DictConfig, run: RunFolder, model_choice: str) -> dict:
    from hydra.utils import instantiate

    from legalft.data.legalbench import LegalBenchSource
    from legalft.data.proslex import ProslexSource

    if "_target_" in cfg.model:  # the encoder configs build a classifier; causal LMs are loaded by name
        raise UserError(f"model={model_choice} is an encoder classifier, and LoRA runs tune causal LMs to write their "
                        "answers: choose model=smollm2, llama3_8b, mistral_7b or qwen2_7b (or fine-tune the encoder: "
                        "train.py without lora).")
    source = instantiate(cfg.data)
    if isinstance(source, ProslexSource):
        return train_statutes_lora(cfg, run, model_choice, source)
    if not isinstance(source, LegalBenchSource):
        raise UserError("LoRA runs train on data=legalbench or data=proslex.")
    tasks = {t.spec.name: t for t in source.load()}
    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    run.write_config(resolved)
    adapters = [(f"{adapter}_fold{i}" if source.regime == "kfold_test" else adapter, trained)
                for adapter, trained, _ in source.groups
                for i in range(source.folds if source.regime == "kfold_test" else 1)]
    atomic_write_json(run.path / "label_spaces.json", {
        adapter: {name: list(tasks[name].spec.labels) for name in trained} for adapter, trained in adapters
    })
    if source.regime == "kfold_test":
        scores, records, training = test_fold_adapters(cfg, run, source, tasks, train=True)
        return returned_metrics(training, write_lora_results(
            cfg, run, model_choice, resolved, scores, records, all_test_examples(tasks)
        ) if is_global_zero() else {})
    scores, records, training = {}, [], []
    for adapter, train_names, scored_names in source.groups:
        log.info("adapter %s trains on %d task(s)", adapter, len(train_names))
        model, tokenizer, _, trained = adapter_for(cfg, run, adapter, lambda tokenizer, chat, names=train_names:
                                                   training_examples([tasks[n] for n in names], tokenizer, chat,
                                                                     cfg.model.max_length))
        training += trained
        if not is_global_zero():
            continue
        task_scores, task_records = score_adapter(adapter, [tasks[n] for n in scored_names], model, tokenizer, cfg)
        scores.update(task_scores)
        records += task_records
    if not is_global_zero():
        return returned_metrics(training, {})
    scores = write_lora_results(cfg, run, model_choice, resolved, scores, records,
                                all_test_examples(tasks))
    return returned_metrics(training, scores)


def test_fold_adapters(cfg: DictConfig, run: RunFolder, source, tasks: dict[str, LegalBenchTask], train: bool):
    """The kfold_test regime: per task, one adapter per fold of the test split (``train=False``
    loads the saved ones to rescore); each test example is predicted by the adapter that did not
    train on it, and the task is scored once over all its folds."""
    from legalft.data.legalbench import test_folds
    from legalft.evaluation.metrics import legalbench_scores

    scores, records, training = {}, [], []
    for name, task in tasks.items():
        fold_records = []
        for fold, part in enumerate(test_folds(task, source.folds, source.seed)):
            adapter = f"{name}_fold{fold}"
            if train:
                model, tokenizer, _, trained = adapter_for(cfg, run, adapter, lambda tokenizer, chat, part=part:
                                                           training_examples([part], tokenizer, chat,
                                                                             cfg.model.max_length))
                training += trained
            else:
                model, tokenizer = load_adapter(cfg, run.require(run.path / "adapters" / adapter, f"adapter {adapter!r}"))
            if is_global_zero():
                fold_records += score_adapter(adapter, [part], model, tokenizer, cfg)[1]
        if not fold_records:
            continue
        by_id = {r["id"]: r for r in fold_records}
        ordered = [by_id[e.id] for e in task.test]
        task_scores = legalbench_scores(name, task.spec.metric, [r["gold"] for r in ordered],
                                        [r["prediction"] for r in ordered], cfg.metric_mode)
        if task.spec.metric == "balanced_accuracy":
            task_scores["invalid_outputs"] = sum(r["prediction"] not in task.spec.labels for r in ordered)
        task_scores.update(category=task.spec.category, adapter=f"{name}_fold0-{source.folds - 1}", folds=source.folds)
        scores[name] = task_scores
        records += ordered
    return scores, records, training


def train_statutes_lora(cfg: DictConfig, run: RunFolder, model_choice: str, source) -> dict:
    """PROSLEX: one adapter that writes the sections as text (and, with incontext.explain, a quote each)."""
    from legalft.data.instruction_data import report_cuts, tokenize_example
    from legalft.incontext.proslex_prompts import build_prompts, format_answer
    from legalft.incontext.runner import statutes_incontext

    splits = source.load()
    task, ic = splits.task, cfg.incontext
    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    run.write_config(resolved)
    atomic_write_json(run.path / "label_spaces.json", {"pooled": {task.name: list(task.labels)}})
    def examples_for(tokenizer, chat):
        prompts, _ = build_prompts(task, splits.train, [], ic.max_input_words, ic.explain)
        examples = [tokenize_example(tokenizer, prompt, format_answer(example, ic.explain), chat, cfg.model.max_length)
                    for prompt, example in zip(prompts, splits.train)]
        report_cuts(examples, [e.id for e in splits.train], cfg.model.max_length)
        return examples

    model, tokenizer, chat, training = adapter_for(cfg, run, "pooled", examples_for)
    if not is_global_zero():
        return returned_metrics(training, {})
    scores, records = statutes_incontext(splits, model.eval(), tokenizer, ic, chat, None) if splits.test else ({}, [])
    return returned_metrics(training, write_lora_results(cfg, run, model_choice, resolved, scores, records,
                                                         splits.test or []))


def returned_metrics(training: list[dict[str, float]], scores: dict) -> dict[str, float]:
    """What train.py hands a sweeper: training metrics averaged over the adapters trained, and each
    task's test scores as test/<task>/<metric>."""
    metrics = {key: sum(m[key] for m in training) / len(training) for key in (training[0] if training else {})}
    for task, task_scores in scores.items():
        metrics.update({f"test/{task}/{k}": v for k, v in task_scores.items() if isinstance(v, float)})
    return metrics


def write_lora_results(cfg, run: RunFolder, model_choice: str, resolved: str, scores: dict, records: list[dict],
                       test_examples) -> dict:
    if not scores:
        log.info("no test split among the scored tasks: score later with evaluate.py run=%s data.root=...", run.path)
        return {}
    info = run_results.run_info(
        method="lora", model=model_choice, seed=cfg.seed, metric_mode=cfg.metric_mode,
        # a subset of the test split, or adapters trained on test folds, cannot stand beside published numbers
        comparable=cfg.data.get("limit") is None and cfg.data.get("regime") != "kfold_test",
        data_fingerprint=run_results.data_fingerprint(test_examples),
        config_digest=run_results.config_digest(resolved), pretrained=str(cfg.model.pretrained),
        regime=cfg.data.get("regime", "pooled"), quantize=str(cfg.lora.quantize), answer=cfg.incontext.answer,
    )
    path = run_results.write_run_results(run.path, info, scores, records)
    for name, task_scores in scores.items():
        print(run_results.format_scores(name, task_scores))
    print(f"run folder: {run.path}\nmetrics:    {path}")
    return scores


def load_adapter(cfg: DictConfig, folder, quantize: bool = True):
    """The base model with a saved adapter on top, refusing an adapter trained on another base."""
    from peft import PeftModel

    from legalft.models.causal_lm import hub_source

    saved_base = json.loads((folder / "adapter_config.json").read_text()).get("base_model_name_or_path")
    expected = hub_source(str(cfg.model.pretrained))[0]
    if saved_base and saved_base != expected:
        raise UserError(f"{folder}: this adapter was trained on {saved_base!r}, but the config's model.pretrained "
                        f"is {expected!r}: set model.pretrained to the adapter's base.")
    model, tokenizer = load_base(cfg, quantize)
    return PeftModel.from_pretrained(model, folder), tokenizer


def evaluate_lora_run(run: RunFolder, data_overrides: Mapping) -> dict:
    """Score every adapter of a LoRA run on its tasks' test splits (optionally from another data root)."""
    from legalft.config import with_data_overrides
    from legalft.data.proslex import ProslexSource
    from legalft.incontext.runner import statutes_incontext

    cfg = OmegaConf.load(run.require(run.config, "config.yaml"))
    cfg.data = with_data_overrides(cfg.data, data_overrides)
    source = instantiate_from_run(cfg.data, "data", run.config)
    model_choice = run_results.recorded_model(run.path, str(cfg.model.pretrained))
    if isinstance(source, ProslexSource):
        splits = source.load()
        model, tokenizer = load_adapter(cfg, run.require(run.path / "adapters" / "pooled", "adapter 'pooled'"))
        chat = use_chat_template(tokenizer, cfg.incontext.chat_template)
        scores, records = statutes_incontext(splits, model.eval(), tokenizer, cfg.incontext, chat, None)
        return write_lora_results(cfg, run, model_choice, run.config.read_text(), scores, records, splits.test or [])
    tasks = {t.spec.name: t for t in source.load()}
    if source.regime == "kfold_test":
        scores, records, _ = test_fold_adapters(cfg, run, source, tasks, train=False)
        return write_lora_results(cfg, run, model_choice, run.config.read_text(), scores, records,
                                  all_test_examples(tasks))
    scores, records = {}, []
    for adapter, _, scored_names in source.groups:
        folder = run.require(run.path / "adapters" / adapter, f"adapter {adapter!r}")
        model, tokenizer = load_adapter(cfg, folder)
        task_scores, task_records = score_adapter(adapter, [tasks[n] for n in scored_names], model, tokenizer, cfg)
        scores.update(task_scores)
        records += task_records
    return write_lora_results(cfg, run, model_choice, run.config.read_text(), scores, records,
                              all_test_examples(tasks))
