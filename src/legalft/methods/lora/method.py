"""``method=lora``: LoRA / QLoRA adapters on a causal LM, trained on the tasks' train splits with
zero-shot prompts (answer tokens only in the loss) and scored on their test splits by the same
prompts, answers and metrics as in-context runs. Training and rescoring walk the same plan."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from legalft import registry
from legalft.data.example import Task
from legalft.errors import UserError
from legalft.evaluation import run_results
from legalft.incontext.engine import backend_of
from legalft.io import atomic_write_json
from legalft.methods.lora.adapters import load_adapter, new_adapter, save_adapter
from legalft.methods.lora.fitting import fit, training_examples
from legalft.methods.lora.plan import Adapter, plan
from legalft.models.causal_lm import to_accelerator
from legalft.run_folder import RunFolder
from legalft.saved_config import instantiate_from_run, load_run_config
from legalft.ranks import secondary_rank

log = logging.getLogger(__name__)


def check_settings(cfg: DictConfig, model_choice: str) -> None:
    if "_target_" in cfg.model:  # the encoder configs build a classifier; causal LMs are loaded by name
        raise UserError(f"model={model_choice} is an encoder classifier, and LoRA runs tune causal LMs to write their "
                        "answers: choose model=smollm2, llama3_8b, mistral_7b or qwen2_7b (or fine-tune the encoder: "
                        "train.py without lora).")
    if cfg.data.get("cv_folds"):
        raise UserError("data.cv_folds: LoRA runs do not cross-validate (method=classical, setfit and encoder do): set data.cv_folds=null.")
    if cfg.prompt.strategy != "zero_shot":
        raise UserError(f"prompt.strategy={cfg.prompt.strategy}: LoRA adapters learn the task from zero-shot "
                        "prompts and are scored on the same prompts; set prompt.strategy=zero_shot.")


@registry.method("lora", aliases=("qlora",))
class LoraMethod:
    """``method=lora``: the adapters ``regime`` plans (``legalft.methods.lora.plan``), each trained with
    AdamW at ``lr``; the lora group shapes them, the prompt group prompts them."""

    served_adapters = True  # evaluate.py run=<folder> engine=server: scored through a server serving the adapters

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

    def run(self, cfg: DictConfig, run: RunFolder, model_choice: str) -> dict:
        from hydra.utils import instantiate

        check_settings(cfg, model_choice)
        tasks = instantiate(self.data_to_load(cfg.data)).load()
        adapters = self.plan(tasks, cfg.seed)
        resolved = OmegaConf.to_yaml(cfg, resolve=True)
        if not secondary_rank():  # rank 0 owns the run folder; a DDP run's other ranks re-run this script
            run.write_config(resolved)
            atomic_write_json(run.label_spaces,
                              {a.name: {t.spec.name: list(t.spec.labels) for t in a.train} for a in adapters})
        scores, records, training = run_adapters(cfg, self, run, tasks, adapters, train=True)
        if secondary_rank():
            return returned_metrics(training, {})
        from legalft.training import instantiate_loggers

        written = write_results(cfg, self.regime, run, model_choice, resolved, scores, records, tasks,
                                instantiate_loggers(cfg))
        complete_model_cards(run, adapters, written, str(cfg.model.pretrained))
        run.keep_checkpoints(cfg)
        return returned_metrics(training, written)

    def rescore(self, run: RunFolder, data_overrides: Mapping, loggers=(), engine=None) -> dict:
        """Score every adapter of a LoRA run on its tasks' test splits (optionally from another data root),
        in this process or, with an ``engine=server`` config, through a server that serves the adapters."""
        from legalft.config import with_data_overrides

        cfg = load_run_config(run)
        cfg.prompt = recorded_prompt(cfg)
        cfg.data = with_data_overrides(cfg.data, data_overrides)
        tasks = instantiate_from_run(self.data_to_load(cfg.data), "data", run.config).load_test()
        scores, records, _ = run_adapters(cfg, self, run, tasks, self.plan(tasks, cfg.seed), train=False, engine=engine)
        model = run_results.recorded_model(run.path, str(cfg.model.pretrained))
        served = {"engine": "server"} if backend_of(engine) == "server" else {}
        return write_results(cfg, self.regime, run, model, run.config.read_text(), scores, records, tasks, loggers,
                             served)


def complete_model_cards(run: RunFolder, adapters: list[Adapter], scores: dict, base: str) -> None:
    """The model card of each adapter this command trained, with its test scores, the test data's
    fingerprint and the command (cards an earlier command wrote are left as they are)."""
    import shlex
    import sys

    from legalft.io import atomic_write_text, created_paths
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


def recorded_prompt(cfg: DictConfig) -> DictConfig:
    """A run folder's prompt settings, as this version names them: older folders call the group
    ``incontext`` and lack settings added since, which those runs ran without."""
    prompt = cfg.prompt if "prompt" in cfg else cfg.incontext
    return OmegaConf.merge({"score_split": "test", "explain": False}, prompt)


def adapter_for(cfg: DictConfig, optimiser: dict, run: RunFolder, adapter: Adapter):
    """(model, tokenizer, training metrics) of ``adapter``: loaded when this run already saved it
    (before a requeue), else trained."""
    import lightning as L

    from legalft.incontext.answers import use_chat_template

    L.seed_everything(cfg.seed, workers=True)
    folder = run.adapter(adapter.name)
    if (folder / "adapter_config.json").exists():
        log.info("adapter %s: already trained, loading %s", adapter.name, folder)
        return (*load_adapter(cfg.model, cfg.lora, folder), [])
    log.info("adapter %s trains on %d task(s)", adapter.name, len(adapter.train))
    model, tokenizer = new_adapter(cfg.model, cfg.lora)
    chat = use_chat_template(tokenizer, cfg.prompt.chat_template)
    examples = training_examples(adapter.train, tokenizer, chat, cfg.model.max_length, cfg.prompt)
    trainer, metrics = fit(cfg, optimiser, run.checkpoints / adapter.name, model, tokenizer, examples)
    save_adapter(trainer, model, tokenizer, folder, str(cfg.model.pretrained), [t.spec.name for t in adapter.train])
    return model, tokenizer, [metrics]


def run_adapters(cfg: DictConfig, method: LoraMethod, run: RunFolder, tasks: list[Task], adapters: list[Adapter],
                 train: bool, engine=None):
    """Each adapter of the plan trained (or loaded, to rescore: the base once for all adapters, or
    through the server ``engine`` configures), then, on rank 0, scored on its tasks. kfold_test folds
    are put back together: each task is scored once, over all its folds."""
    from legalft.incontext.engine import LocalEngine, backend_of
    from legalft.incontext.prompts import PromptBuilder
    from legalft.incontext.runner import score_tasks
    from legalft.methods.lora.scoring import ServedAdapters, SwitchedAdapters

    scores, records, training, folds = {}, [], [], defaultdict(list)
    rescoring = None if train else ServedAdapters(cfg, engine) if backend_of(engine) == "server" else SwitchedAdapters(cfg, run)
    for adapter in adapters:
        if train:
            model, tokenizer, trained = adapter_for(cfg, method.optimiser, run, adapter)
            training += trained
            if secondary_rank():
                continue
            answers = LocalEngine(to_accelerator(model.eval()), tokenizer)  # Lightning hands it back on the CPU
        else:
            answers = rescoring.engine_for(adapter)
        chat = answers.use_chat(cfg.prompt.chat_template)
        task_scores, task_records = score_tasks([t for t in adapter.scored if t.test], answers, cfg.prompt, chat,
                                                cfg.seed, cfg.metric_mode, builder=PromptBuilder("zero_shot"))
        if adapter.fold_of:
            folds[adapter.fold_of] += task_records
            continue
        for name in task_scores:
            task_scores[name]["adapter"] = adapter.name
        scores.update(task_scores)
        records += task_records
    for task in tasks:
        if task.spec.name in folds:
            task_scores, ordered = merged_folds(task, folds[task.spec.name], method.folds, cfg.metric_mode)
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


def write_results(cfg, regime: str, run: RunFolder, model_choice: str, resolved: str, scores: dict,
                  records: list[dict], tasks: list[Task], loggers=(), engine_record: dict | None = None) -> dict:
    if not scores:
        log.info("no test split among the scored tasks: score later with evaluate.py run=%s data.root=...", run.path)
        return {}
    info = run_results.run_info(
        method=LoraMethod.name, model=model_choice, seed=cfg.seed, metric_mode=cfg.metric_mode,
        # a subset of the test split, or adapters trained on test folds, cannot stand beside published numbers
        comparable=cfg.data.get("limit") is None and regime != "kfold_test",
        data_fingerprint=run_results.data_fingerprint(e for t in tasks if t.test for e in t.test),
        config_digest=run_results.config_digest(resolved), pretrained=str(cfg.model.pretrained),
        regime=regime, quantize=str(cfg.lora.quantize), answer=cfg.prompt.answer,
        **(engine_record or {}),
    )
    from legalft.evaluation.results_logging import log_folder_as_model

    log_folder_as_model(loggers, run.adapters, {k: info[k] for k in ("method", "model", "pretrained", "regime")})
    run_results.publish(run.path, info, scores, records, loggers)
    return scores
