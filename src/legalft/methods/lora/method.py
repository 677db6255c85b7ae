"""``method=lora``: LoRA / QLoRA adapters on a causal LM, trained on the tasks' train splits with
zero-shot prompts (answer tokens only in the loss) and scored on their test splits by the same
prompts, answers and metrics as in-context runs. Training and rescoring walk the same plan. With
``protocol.cv_folds=K``, fold adapters are scored first (``legalft.methods.lora.cross_validation``)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace

from omegaconf import DictConfig

from collections.abc import Mapping

from legalft.llm.prompts import PROMPT_SETTINGS
from legalft.models.lora_settings import LORA_SETTINGS
from legalft.data.example import Task
from legalft.foundation.checks import one_of, whole
from legalft.foundation.errors import UserError
from legalft.evaluation import run_results
from legalft.llm.engine import backend_of
from legalft.foundation.io import atomic_write_json
from legalft.kit.base import Classified, Exported, chosen_task
from legalft.kit.trained import TrainedMethod
from legalft.methods.lora.adapters import load_adapter, model_card
from legalft.models.adapter_files import save_adapter
from legalft.methods.lora.cross_validation import cross_validate, task_to_fold
from legalft.methods.lora.fitting import train_adapter
from legalft.methods.lora.plan import REGIMES, Adapter, plan
from legalft.models.kinds import CAUSAL_LM, kind_of
from legalft.foundation.ranks import secondary_rank
from legalft.runs.context import RunContext
from legalft.runs.folder import RunFolder

log = logging.getLogger(__name__)


def check_settings(ctx: RunContext) -> None:
    if kind_of(ctx.model) != CAUSAL_LM:
        raise UserError(f"model={ctx.model_choice} is an {kind_of(ctx.model)} model, not a causal LM, and LoRA runs tune "
                        "causal LMs to write their answers: choose model=smollm2, llama3_8b, mistral_7b or qwen2_7b (or fine-tune the encoder: "
                        "train.py without lora).")
    if ctx.cv_folds:
        from legalft.kit.folds import on_one_device

        on_one_device(ctx.trainer_config)  # its fold adapters train one after another
    if ctx.prompt.strategy != "zero_shot":
        raise UserError(f"prompt.strategy={ctx.prompt.strategy}: LoRA adapters learn the task from zero-shot "
                        "prompts and are scored on the same prompts; set prompt.strategy=zero_shot.")


class LoraMethod(TrainedMethod):
    """``method=lora``: the adapters ``regime`` plans (``legalft.methods.lora.plan``), each trained with
    AdamW at ``lr``; the lora group shapes them, the prompt group prompts them."""

    name = "lora"
    settings = {"folds": (whole(2), "a whole number of folds, 2 or more"),
                "regime": (one_of(*REGIMES), f"one of {', '.join(REGIMES)}")}
    group_settings = {"lora": LORA_SETTINGS, "prompt": PROMPT_SETTINGS}
    served_adapters = True  # evaluate.py run=<folder> engine=server: scored through a server serving the adapters

    @classmethod
    def report_words(cls, info: Mapping) -> list[str]:
        quantized = info.get("quantize") not in (None, "none")
        return ["qlora" if quantized else cls.name, str(info.get("model", "?")), str(info.get("regime", "pooled"))]

    @classmethod
    def hub_prompt_id(cls, info: Mapping) -> str:
        return "-".join(str(p) for p in (cls.name, info.get("regime"), "score" if info.get("answer") == "score" else "")
                        if p)

    def __init__(self, regime: str = "pooled", heldout: str | None = None, folds: int = 5, lr: float = 2e-4,
                 weight_decay: float = 0.0, warmup_ratio: float = 0.1) -> None:
        self.regime, self.heldout, self.folds = regime, heldout, folds
        self.optimiser = {"lr": lr, "weight_decay": weight_decay, "warmup_ratio": warmup_ratio}

    def plan(self, tasks: list[Task], seed: int) -> list[Adapter]:
        if self.regime == "kfold_test" and any(t.spec.multi_label for t in tasks):
            raise UserError("method.regime=kfold_test folds single-label test splits; statute prediction trains pooled.")
        return plan(tasks, self.regime, self.heldout, self.folds, seed)

    def data_to_load(self, data_cfg: DictConfig) -> DictConfig:
        """The data config with a leave_one_out run's held-out task among the tasks it loads (scored,
        never trained on), so ``data.tasks`` names only the tasks trained on."""
        tasks = data_cfg.get("tasks")
        if self.regime != "leave_one_out" or self.heldout is None or tasks in (None, "all"):
            return data_cfg
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        if self.heldout in tasks:
            return data_cfg
        data_cfg = data_cfg.copy()
        data_cfg.tasks = [*tasks, self.heldout]
        return data_cfg

    def run(self, ctx: RunContext) -> dict:
        check_settings(ctx)
        tasks = ctx.tasks(self.data_to_load(ctx.data))
        folded = task_to_fold(tasks, self.regime) if ctx.cv_folds else None
        adapters = self.plan(tasks, ctx.seed)
        ctx.write_config()
        cv_metrics, cv_fields = {}, {}
        if folded is not None:  # fold adapters scored out of fold (cv.json); the run's adapter then learns from them all
            cv_metrics, cv_fields = cross_validate(ctx, self.optimiser, folded)
            tasks = [replace(folded, train=folded.train + folded.val, val=[])]
            adapters = self.plan(tasks, ctx.seed)
        if not secondary_rank():  # rank 0 owns the run folder; a DDP run's other ranks re-run this script
            atomic_write_json(ctx.folder.label_spaces,
                              {a.name: {t.spec.name: list(t.spec.labels) for t in a.train} for a in adapters})
        scores, records, training = run_adapters(ctx, self, tasks, adapters, train=True)
        if secondary_rank():
            return returned_metrics(training, {})
        written = write_results(ctx, self, ctx.model_choice, scores, records, tasks, cv_fields)
        complete_model_cards(ctx.folder, adapters, written, str(ctx.model.pretrained))
        self.finish(ctx)
        return {**cv_metrics, **returned_metrics(training, written)}

    def rescore(self, ctx: RunContext) -> dict:
        """Score every adapter of a LoRA run on its tasks' test splits (optionally from another data root),
        in this process or, with an ``engine=server`` config, through a server that serves the adapters."""
        tasks = ctx.test_tasks(self.data_to_load(ctx.data))
        scores, records, _ = run_adapters(ctx, self, tasks, self.plan(tasks, ctx.seed), train=False)
        model = run_results.recorded_model(ctx.folder.path, str(ctx.model.pretrained))
        served = {"engine": "server"} if backend_of(ctx.engine) == "server" else {}
        return write_results(ctx, self, model, scores, records, tasks, served)


    def classify(self, ctx: RunContext, examples: list, task: str | None = None) -> Classified:
        """The adapter the run scored ``task`` with, on ``examples``, prompted zero-shot as it was trained: on the
        base loaded in this process, or through the server ``engine=server`` names (serving the adapters)."""
        from legalft.methods.lora.fitting import adapter_prompts
        from legalft.llm.scoring import unlabelled_answers
        from legalft.methods.lora.scoring import ServedAdapters, SwitchedAdapters

        if self.regime == "kfold_test":
            raise UserError(f"run={ctx.folder.path}: method.regime=kfold_test adapters each learnt from part of a "
                            "task's test split, so none is the task's model; predict with a pooled or per_task run.")
        tasks = ctx.tasks(self.data_to_load(ctx.data))
        adapters = self.plan(tasks, ctx.seed)
        by_name = {t.spec.name: t for a in adapters for t in a.scored}
        chosen = chosen_task(list(by_name.values()), task, ctx.folder.path)
        adapter = next(a for a in adapters if chosen.spec.name in {t.spec.name for t in a.scored})
        answering = (ServedAdapters(ctx.engine, ctx.model, ctx.prompt) if backend_of(ctx.engine) == "server"
                     else SwitchedAdapters(ctx.folder, ctx.model, ctx.lora.quantize)).engine_for(adapter)
        answers = unlabelled_answers(replace(chosen, test=examples), answering, ctx.prompt,
                                     answering.use_chat(ctx.prompt.chat_template), adapter_prompts(ctx.prompt))
        return Classified(chosen.spec, None, None, answers=answers)

    def export(self, ctx: RunContext, folder, part: str | None = None) -> Exported:
        """An adapter (``adapter=``, where the run trained several) merged into its base
        (``legalft.methods.lora.adapters.export_merged``)."""
        from legalft.methods.lora.adapters import export_merged

        return export_merged(ctx, folder, part)

def complete_model_cards(run: RunFolder, adapters: list[Adapter], scores: dict, base: str) -> None:
    """The model card of each adapter this command trained, with its test scores, the test data's
    fingerprint and the command (cards an earlier command wrote are left as they are)."""
    import shlex
    import sys

    from legalft.foundation.io import atomic_write_text, created_paths
    from legalft.methods.lora.adapters import model_card

    fingerprint = json_field(run.metrics, "run", "data_fingerprint")
    command = shlex.join(["python", *sys.argv])
    for adapter in adapters:
        folder = run.adapter(adapter.name).absolute()
        if folder in created_paths():
            own = {task: s for task, s in scores.items() if s.get("adapter") == adapter.name}
            atomic_write_text(folder / "README.md", model_card(adapter.name, base, [t.spec.name for t in adapter.train], own,
                                               fingerprint, command))


def json_field(path, *keys):
    import json

    try:
        value = json.loads(path.read_text())
        for key in keys:
            value = value[key]
        return value
    except (OSError, ValueError, KeyError, TypeError):
        return None


def adapter_for(ctx: RunContext, optimiser: dict, adapter: Adapter):
    """(model, tokenizer, training metrics) of ``adapter``: loaded when this run already saved it
    (before a requeue), else trained."""
    import lightning as L

    L.seed_everything(ctx.seed, workers=True)
    folder = ctx.folder.adapter(adapter.name)
    if (folder / "adapter_config.json").exists():
        log.info("adapter %s: already trained, loading %s", adapter.name, folder)
        return (*load_adapter(ctx.model, ctx.lora, folder), [])
    log.info("adapter %s trains on %d task(s)", adapter.name, len(adapter.train))
    trainer, model, tokenizer, metrics = train_adapter(ctx, optimiser, adapter.train,
                                                       ctx.folder.adapter_checkpoints(adapter.name) / "last.ckpt")
    save_adapter(trainer, model, tokenizer, folder,
                 model_card(folder.name, str(ctx.model.pretrained), [t.spec.name for t in adapter.train]))
    return model, tokenizer, [metrics]


def run_adapters(ctx: RunContext, method: LoraMethod, tasks: list[Task], adapters: list[Adapter], train: bool):
    """Each adapter of the plan trained (or loaded, to rescore: the base once for all adapters, or
    through the server ``ctx.engine`` configures), then, on rank 0, scored on its tasks. kfold_test folds
    are put back together: each task is scored once, over all its folds."""
    from legalft.methods.lora.scoring import ServedAdapters, SwitchedAdapters, local_engine, scored

    scores, records, training, folds = {}, [], [], defaultdict(list)
    rescoring = None
    if not train:
        rescoring = (ServedAdapters(ctx.engine, ctx.model, ctx.prompt) if backend_of(ctx.engine) == "server"
                     else SwitchedAdapters(ctx.folder, ctx.model, ctx.lora.quantize))
    for adapter in adapters:
        if train:
            model, tokenizer, trained = adapter_for(ctx, method.optimiser, adapter)
            training += trained
            if secondary_rank():
                continue
            answers = local_engine(model, tokenizer)
        else:
            answers = rescoring.engine_for(adapter)
        task_scores, task_records = scored(ctx, answers, [t for t in adapter.scored if t.test])
        if adapter.fold_of:
            folds[adapter.fold_of] += task_records
            continue
        for name in task_scores:
            task_scores[name]["adapter"] = adapter.name
        scores.update(task_scores)
        records += task_records
    for task in tasks:
        if task.spec.name in folds:
            task_scores, ordered = merged_folds(task, folds[task.spec.name], method.folds, ctx.metric_mode)
            scores[task.spec.name] = task_scores
            records += ordered
    return scores, records, training


def merged_folds(task: Task, fold_records: list[dict], folds: int, metric_mode: str) -> tuple[dict, list[dict]]:
    from legalft.evaluation.metrics import legalbench_scores

    by_id = {r["id"]: r for r in fold_records}
    ordered = [by_id[e.id] for e in task.test]
    scores = legalbench_scores(task.spec.name, task.spec.metric, [r["gold"] for r in ordered],
                               [r["prediction"] for r in ordered], metric_mode)
    if task.spec.kind == "label":
        scores["invalid_outputs"] = sum(r["prediction"] not in task.spec.labels for r in ordered)
    scores.update(category=task.spec.category, adapter=f"{task.spec.name}_fold0-{folds - 1}", folds=folds)
    return scores, ordered


def returned_metrics(training: list[dict[str, float]], scores: dict) -> dict[str, float]:
    """What train.py hands a sweeper: training metrics averaged over the adapters trained, and each
    task's test scores as test/<task>/<metric>."""
    metrics = {key: sum(m[key] for m in training) / len(training) for key in (training[0] if training else {})}
    for task, task_scores in scores.items():
        metrics.update({f"test/{task}/{k}": v for k, v in task_scores.items() if isinstance(v, float)})
    return metrics


def write_results(ctx: RunContext, method: LoraMethod, model: str, scores: dict, records: list[dict],
                  tasks: list[Task], run_fields: dict | None = None) -> dict:
    from legalft.evaluation.results_logging import log_folder_as_model

    run = ctx.folder
    if not scores:
        log.info("no test split among the scored tasks: score later with evaluate.py run=%s data.root=...", run.path)
        return {}
    fields = dict(model=model, pretrained=str(ctx.model.pretrained), regime=method.regime,
                  # a subset of the test split, or adapters trained on test folds, cannot stand beside published numbers
                  comparable=ctx.whole_test_split and method.regime != "kfold_test",
                  quantize=str(ctx.lora.quantize), answer=ctx.prompt.answer, **(run_fields or {}))
    log_folder_as_model(ctx.loggers, run.adapters, {"method": method.name, **{k: fields[k] for k in
                                                                              ("model", "pretrained", "regime")}})
    return method.publish(ctx, scores, records, [e for t in tasks if t.test for e in t.test], **fields)
