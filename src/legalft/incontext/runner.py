"""In-context runs: a causal LM prompted on each test example, scored by the shared metrics, written
in the same files as a fine-tuned run."""

from __future__ import annotations

import logging

from omegaconf import DictConfig, OmegaConf

from legalft.data.legalbench import LegalBenchTask
from legalft.evaluation import run_results
from legalft.evaluation.metrics import legalbench_scores
from legalft.evaluation.normalize import normalize
from legalft.incontext.answers import apply_chat_template, generate, label_log_likelihoods
from legalft.incontext.prompts import PromptBuilder, SentenceEmbedder
from legalft.run_folder import RunFolder

log = logging.getLogger(__name__)
ANSWER_MODES = ("generate", "score")


def match_label(generation: str, labels: tuple[str, ...]) -> str | None:
    """The label a generation names after normalisation, or None when it names none."""
    by_normal = {normalize(label): label for label in labels}
    return by_normal.get(normalize(generation))


def answer_task(task: LegalBenchTask, prompts: list[str], model, tokenizer, answer: str, max_new_tokens: int,
                batch_size: int, chat: bool) -> tuple[list[str], list[str | None]]:
    """(what is scored, raw generations): label choices when scoring, generations otherwise."""
    labels = list(task.spec.labels)
    if answer == "score" and task.spec.metric == "balanced_accuracy":
        chosen = []
        for prompt in prompts:
            likelihoods = label_log_likelihoods(model, tokenizer, prompt, labels, separator="" if chat else " ")
            chosen.append(labels[int(likelihoods.argmax())])
        return chosen, [None] * len(prompts)
    raw = generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return raw, raw


def run_incontext(cfg: DictConfig, run: RunFolder, model_choice: str) -> dict:
    from hydra.utils import instantiate

    from legalft.models.causal_lm import load_causal_lm

    ic = cfg.incontext
    if ic.answer not in ANSWER_MODES:
        from legalft.errors import UserError

        raise UserError(f"incontext.answer={ic.answer!r}: choose generate or score.")
    tasks = instantiate(cfg.data).load()  # data errors surface before the model is loaded
    model, tokenizer = load_causal_lm(cfg.model.pretrained, dtype=cfg.model.get("dtype", "float32"))
    chat = {"auto": bool(tokenizer.chat_template), True: True, False: False}[ic.chat_template]
    embedder = SentenceEmbedder(ic.embedder) if ic.strategy == "few_shot" and ic.selection == "similar" else None
    builder = PromptBuilder(ic.strategy, ic.k, ic.selection, cfg.seed, embedder)

    scores, records = {}, []
    for task in tasks:
        prompts = builder.build(task, task.test)
        if chat:
            prompts = apply_chat_template(tokenizer, prompts)
        scored, raw = answer_task(task, prompts, model, tokenizer, ic.answer, ic.max_new_tokens, ic.batch_size, chat)
        gold = [e.labels[0] for e in task.test]
        task_scores = legalbench_scores(task.spec.name, task.spec.metric, gold, scored, cfg.metric_mode)
        if task.spec.metric == "balanced_accuracy":
            predictions = [match_label(s, task.spec.labels) for s in scored]
            task_scores["invalid_outputs"] = sum(p is None for p in predictions)
        else:
            predictions = scored
        task_scores["category"] = task.spec.category
        scores[task.spec.name] = task_scores
        for example, prediction, text in zip(task.test, predictions, raw):
            record = {"task": task.spec.name, "id": example.id, "gold": example.labels[0],
                      "prediction": prediction if prediction is not None else text}
            if text is not None:
                record["raw"] = text
            records.append(record)
        log.info("%s: %s", task.spec.name, {k: v for k, v in task_scores.items() if k != "category"})

    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    run.write_config(resolved)
    info = run_results.run_info(
        method="incontext", model=model_choice, seed=cfg.seed, metric_mode=cfg.metric_mode,
        data_fingerprint=run_results.data_fingerprint(e for t in tasks for e in t.test),
        config_digest=run_results.config_digest(resolved), pretrained=str(cfg.model.pretrained),
        prompt=ic.strategy, k=ic.k, selection=ic.selection, answer=ic.answer,
    )
    path = run_results.write_run_results(run.path, info, scores, records)
    for name, task_scores in scores.items():
        print(run_results.format_scores(name, task_scores))
    print(f"run folder: {run.path}\nmetrics:    {path}")
    return scores
