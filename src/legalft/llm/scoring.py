"""Scoring a causal LM's answers to a task's prompts, by the shared metrics: generated answers read
strictly (and flexibly, as lm-evaluation-harness does), or labels chosen by their log-likelihood; label
sets for multi-label tasks. What in-context runs and LoRA adapters are both scored by."""

from __future__ import annotations

import logging
import math

from legalft.data.example import Task
from legalft.evaluation.metrics import legalbench_scores
from legalft.evaluation.normalize import normalize
from legalft.llm.prompts import PromptBuilder, SentenceEmbedder

log = logging.getLogger(__name__)
ANSWER_MODES = ("generate", "score")


def match_label(generation: str, labels: tuple[str, ...]) -> str | None:
    """The label a generation names after normalisation, or None when it names none."""
    by_normal = {normalize(label): label for label in labels}
    return by_normal.get(normalize(generation))


def first_label_stated(generation: str, labels: tuple[str, ...]) -> str | None:
    """Flexible reading, like lm-evaluation-harness's flexible-extract filter: the label the generation
    states first, as whole words after LegalBench's normalisation ("The answer is: No." -> No); where two
    labels start at the same word, the longer one ("Not hearsay" over "Not")."""
    words = normalize(generation).split()
    found = []  # (where it starts, minus its length, label)
    for label in labels:
        target = normalize(label).split()
        starts = [i for i in range(len(words) - len(target) + 1) if target and words[i:i + len(target)] == target]
        if starts:
            found.append((starts[0], -len(target), label))
    return min(found)[2] if found else None


def chosen_labels(task: str, labels: list[str], likelihoods) -> tuple[list[str], list[dict]]:
    """Each row's most likely label, and each label's log-likelihood. A row whose log-likelihoods are not
    numbers (NaN, +inf, or every label -inf: a server's or a half-precision model's failure) chooses no label:
    it is an invalid output, never the first label by default."""
    import numpy as np

    values = np.asarray(likelihoods, dtype=float)
    unreadable = np.isnan(values).any(axis=1) | np.isposinf(values).any(axis=1) | ~np.isfinite(values).any(axis=1)
    if unreadable.any():
        log.warning("%s: %d of %d rows have label log-likelihoods that are not numbers (NaN or infinite); each counts "
                    "as an invalid output (predictions.jsonl holds them as null)", task, int(unreadable.sum()), len(values))
    choices = values.argmax(axis=1) if len(labels) else []
    scored = ["" if bad else labels[int(i)] for i, bad in zip(choices, unreadable)]
    per_label = [{label: round(float(v), 4) if math.isfinite(v) else None for label, v in zip(labels, row)}
                 for row in values]
    return scored, per_label


def answer_task(task: Task, prompts: list[str], engine, answer: str, max_new_tokens: int,
                batch_size: int, chat: bool) -> tuple[list[str], list[str | None], list[dict | None]]:
    """(what is scored, raw generations, each label's log-likelihood): label choices and their
    log-likelihoods when scoring, generations otherwise."""
    labels = list(task.spec.labels)
    if answer == "score" and task.spec.kind == "label":
        likelihoods = engine.label_log_likelihoods(prompts, labels, separator="" if chat else " ",
                                                   batch_size=batch_size, what=f"{task.spec.name}: scoring labels",
                                                   chat=chat)
        scored, per_label = chosen_labels(task.spec.name, labels, likelihoods)
        return scored, [None] * len(prompts), per_label
    raw = engine.generate(prompts, max_new_tokens=max_new_tokens, batch_size=batch_size,
                          what=f"{task.spec.name}: generating", chat=chat)
    return raw, raw, [None] * len(prompts)


def score_tasks(tasks: list[Task], engine, ic, chat: bool, seed: int, metric_mode: str,
                builder: PromptBuilder | None = None, on_task_done=None, explanations=None) -> tuple[dict, list[dict]]:
    """Every task prompted and scored: multi-label tasks as statute prediction, the rest as LegalBench
    tasks; ``builder`` overrides the prompt strategy ``ic`` names (LoRA runs prompt zero-shot);
    ``on_task_done(tasks done, rows done)`` after each task; ``explanations``: how generated explanations
    are scored (the ``explanations`` config group)."""
    builder = builder or prompt_builder(tasks, ic, seed)
    scores, records = {}, []
    for number, task in enumerate(tasks, 1):
        log.info("task %d of %d: %s, %d test rows", number, len(tasks), task.spec.name, len(task.test))
        if task.spec.multi_label:
            task_scores, task_records = label_sets_incontext(task, engine, ic, chat, builder, explanations)
        else:
            task_scores, task_records = legalbench_incontext([task], engine, ic, chat, builder, metric_mode)
        scores.update(task_scores)
        records += task_records
        if on_task_done is not None:
            on_task_done(number, len(records))
    return scores, records


def prompt_builder(tasks: list[Task], ic, seed: int) -> PromptBuilder:
    """The prompts ``ic`` (the prompt group) names, with the sentence embedder its demonstrations are chosen by."""
    few_shot = ic.strategy == "few_shot"
    needs_embedder = few_shot and (ic.selection == "similar" or any(t.spec.multi_label for t in tasks))
    embedder = SentenceEmbedder(ic.embedder) if needs_embedder else None
    return PromptBuilder(ic.strategy, ic.k, ic.selection, seed, embedder, exclude_scored=ic.score_split == "train",
                         template=ic.get("template"), max_input_words=ic.max_input_words, explain=ic.explain)


def unlabelled_answers(task: Task, engine, ic, chat: bool, builder: PromptBuilder) -> list[dict]:
    """The answers to ``task.test``, documents nobody labelled (``predict.py``), prompted as the run was scored: per
    document its ``prediction`` (a label, read strictly and else flexibly; a multi-label task's list of labels;
    None where the answer names none), the ``raw`` generation, each label's log-likelihood (``label_scores``) where
    labels were scored, and each predicted section's quoted ``evidence`` where the prompt asks for explanations."""
    from legalft.llm import label_set_prompts

    spec = task.spec
    if spec.multi_label:
        prompts = builder.build(task, task.test)
        raw = engine.generate(prompts, max_new_tokens=ic.max_new_tokens, batch_size=ic.batch_size,
                              what=f"{spec.name}: generating", chat=chat)
        answers = []
        for generation in raw:
            if ic.explain == label_set_prompts.JSON:
                parsed = label_set_prompts.parse_json_answer(generation, spec)
                labels, quotes = parsed.labels, parsed.quotes
            else:
                labels = label_set_prompts.parse_labels(generation, spec)
                quotes = label_set_prompts.parse_explanations(generation, spec) if ic.explain else {}
            answer = {"prediction": labels, "raw": generation}
            if quotes:
                answer["evidence"] = {label: [quote] for label, quote in quotes.items()}
            answers.append(answer)
        return answers
    scored, raw, label_scores = answer_task(task, builder.build(task, task.test), engine, ic.answer, ic.max_new_tokens,
                                            ic.batch_size, chat)
    answers = []
    for answer, generation, likelihoods in zip(scored, raw, label_scores):
        prediction = answer
        if spec.kind == "label":
            prediction = match_label(answer, spec.labels) or first_label_stated(answer, spec.labels)
        record = {"prediction": prediction or None}
        if generation is not None:
            record["raw"] = generation
        if likelihoods is not None:
            record["label_scores"] = likelihoods
        answers.append(record)
    return answers


def label_sets_incontext(data: Task, engine, ic, chat, builder: PromptBuilder, explanations=None
                         ) -> tuple[dict, list[dict]]:
    """Multi-label tasks: zero-shot or k-shot-per-label prompts (PROSLEX's, for statutes), generated
    answers parsed into sets of labels; with ``ic.explain``, a quote for each section, its place in the facts
    checked (``legalft.evaluation.grounding``) and scored against the experts' spans."""
    from legalft.evaluation.explanations import bertscore_settings, explanation_scores
    from legalft.evaluation.grounding import grounding_scores, sections_without_evidence
    from legalft.evaluation.metrics import multilabel_scores
    from legalft.llm import label_set_prompts

    task, explain = data.spec, builder.explain
    prompts = builder.build(data, data.test)
    raw = engine.generate(prompts, max_new_tokens=ic.max_new_tokens, batch_size=ic.batch_size,
                          what=f"{task.name}: generating", chat=chat)
    answers = [label_set_prompts.parse_json_answer(g, task) for g in raw] if explain == label_set_prompts.JSON \
        else None
    predicted = [a.labels for a in answers] if answers else [label_set_prompts.parse_labels(g, task) for g in raw]
    scores = multilabel_scores([list(e.labels) for e in data.test], predicted, task.labels)
    scores["invalid_outputs"] = sum(not p for p in predicted)
    records = [
        {"task": task.name, "id": e.id, "gold": list(e.labels), "prediction": p, "raw": g}
        for e, p, g in zip(data.test, predicted, raw)
    ]
    if answers:  # items that name no one label: counted, never read as one
        scores["invalid_json_items"] = sum(a.invalid_items for a in answers)
        unread = [a.problem for a in answers if a.problem]
        if unread:
            log.warning("%s: %d of %d generations hold no readable JSON list (first: %s); each counts as naming "
                        "no section (raw in predictions.jsonl)", task.name, len(unread), len(answers), unread[0])
    if explain:  # each generated quote against the gold spans of the same (correctly predicted) label
        pairs, documents = [], []
        for number, (example, record, generation) in enumerate(zip(data.test, records, raw)):
            if answers:
                quoted = answers[number].quotes
                record["reasoning"] = answers[number].reasoning
            else:
                quoted = label_set_prompts.parse_explanations(generation, task)
            record["explanations"] = quoted
            record["evidence"] = {label: [quote] for label, quote in quoted.items()}
            documents.append((example.text, record["evidence"], example.explanations))
            pairs += [(quote, " ".join(example.explanations[label]))
                      for label, quote in quoted.items() if example.explanations.get(label)]
        scores.update(grounding_scores(documents))  # a quote that is not in the facts is counted as such
        scores["evidence_missing"] = sections_without_evidence(records)
        scores.update(explanation_scores([p for p, _ in pairs], [r for _, r in pairs],
                                         **bertscore_settings(explanations)))
    return {task.name: scores}, records


INVALID_WARNING_SHARE = 0.2  # above this share of unreadable generations, the setup is the likelier cause


def warn_if_mostly_invalid(task: str, invalid: int, n: int, chat: bool) -> None:
    """Generations that name no label score as wrong answers; when many do, the prompt setup is the
    likelier cause than the model's knowledge: the warning names the usual causes and their fixes."""
    if n and invalid > INVALID_WARNING_SHARE * n:
        causes = ["a chat template around a completion prompt (prompt.chat_template=false)"] if chat else []
        causes += ["too few tokens to finish a label (raise prompt.max_new_tokens)",
                   "a prompt that does not end where the answer starts"]
        log.warning("%s: %d of %d generations name no label under strict reading (see raw in predictions.jsonl), "
                    "and each counts as a wrong answer. Likely causes: %s. prompt.answer=score picks a label by its "
                    "log-likelihood instead.", task, invalid, n, "; ".join(causes))


def legalbench_incontext(tasks, engine, ic, chat, builder, metric_mode) -> tuple[dict, list[dict]]:
    scores, records = {}, []
    for task in tasks:
        prompts = builder.build(task, task.test)
        scored, raw, label_scores = answer_task(task, prompts, engine, ic.answer, ic.max_new_tokens,
                                                ic.batch_size, chat)
        gold = [e.labels[0] for e in task.test]
        task_scores = legalbench_scores(task.spec.name, task.spec.metric, gold, scored, metric_mode)
        flexible = [None] * len(scored)
        if task.spec.kind == "label":
            predictions = [match_label(s, task.spec.labels) for s in scored]
            task_scores["invalid_outputs"] = sum(p is None for p in predictions)
            if raw[0] is not None and "metric" in task_scores and not task_scores.get("manual_grading"):
                flexible = [p or first_label_stated(s, task.spec.labels) for p, s in zip(predictions, scored)]
                task_scores.update(read_both_ways(task, gold, scored, predictions, flexible, metric_mode))
            warn_if_mostly_invalid(task.spec.name, task_scores["invalid_outputs"], len(predictions), chat)
        else:
            predictions = scored
        task_scores["category"] = task.spec.category
        scores[task.spec.name] = task_scores
        for example, prediction, text, likelihoods, flexibly in zip(task.test, predictions, raw, label_scores, flexible):
            record = {"task": task.spec.name, "id": example.id, "gold": example.labels[0],
                      "prediction": prediction if prediction is not None else text}
            if text is not None:
                record["raw"] = text
            if flexibly is not None:
                record["prediction_flexible"] = flexibly
            if likelihoods is not None:  # for calibration and error analysis without rerunning
                record["scores"] = likelihoods
            records.append(record)
        log.info("%s: %s", task.spec.name, {k: v for k, v in task_scores.items() if k != "category"})
    return scores, records


def read_both_ways(task: Task, gold: list[str], generations: list[str], strict: list[str | None],
                   flexible: list[str | None], metric_mode: str) -> dict:
    """Generated answers read two ways, as lm-evaluation-harness reports strict-match and flexible-extract:
    the task's metric stays LegalBench's own (strict: the whole normalised output is a label);
    ``<metric>_flexible`` scores the first label each output states, and ``read_strict`` /
    ``read_flexible`` are the shares of outputs each reading found a label in."""
    read = [f if f is not None else g for f, g in zip(flexible, generations)]  # unread outputs stay wrong
    flexible_scores = legalbench_scores(task.spec.name, task.spec.metric, gold, read, metric_mode)
    metric, n = flexible_scores["metric"], max(len(generations), 1)
    return {f"{metric}_flexible": flexible_scores[metric], "read_strict": sum(p is not None for p in strict) / n,
            "read_flexible": sum(p is not None for p in flexible) / n}
