"""``method=incontext`` (evaluate.py prompt=...): a causal LM prompted on each test example, scored by the
shared metrics (``legalft.llm.scoring``), written in the same files as a fine-tuned run."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from legalft.data.example import Task
from legalft.llm.prompts import PROMPT_SETTINGS
from legalft.llm.scoring import ANSWER_MODES, score_tasks
from legalft.kit.base import Classified, Method, chosen_task
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)


def text_digest(text: str) -> str:
    """A user template's short name in results and reports."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:8]


def run_incontext(ctx: RunContext) -> dict:
    from legalft.foundation.errors import UserError
    from legalft.llm.engine import open_engine

    ic = ctx.prompt
    if ic.answer not in ANSWER_MODES:
        raise UserError(f"prompt.answer={ic.answer!r}: choose generate or score.")
    # data errors surface before the model is loaded; the train split is read only where prompts draw on it
    tasks = ctx.tasks() if ic.score_split == "train" or draws_on_train(ic) else ctx.test_tasks()
    if ic.score_split == "train":
        tasks = train_split_as_scored(tasks, ic)
    if any(t.test is None for t in tasks):
        raise UserError("in-context runs score test splits, and this data has none: keep test in data.splits, or "
                        "set data.test_path or data.root.")
    if any(t.spec.multi_label for t in tasks) and ic.answer != "generate":
        raise UserError("multi-label tasks (statute prediction) are answered with sets of labels: use "
                        "prompt.answer=generate.")
    unexplained = [t.spec.name for t in tasks if t.spec.multi_label and not any(e.explanations for e in t.train)]
    if ic.strategy == "few_shot" and unexplained:
        raise UserError(f"prompt.strategy=few_shot: a multi-label task's demonstrations are its train rows' "
                        f"explanation spans, and {', '.join(unexplained)} has none: use prompt=zero_shot.")
    short = [f"{t.spec.name} ({len(t.train)})" for t in tasks if len(t.train) < ic.k]
    if ic.strategy == "few_shot" and short:  # found before the model is loaded, not after
        raise UserError(f"prompt.k={ic.k}: more demonstrations than train rows in {', '.join(short[:5])}"
                        f"{' ...' if len(short) > 5 else ''}: lower prompt.k.")
    from legalft.evaluation.results_logging import log_progress

    loggers = ctx.loggers  # open from the start: W&B shows the run, its config and its progress
    engine = open_engine(ctx.engine, ctx.model)
    chat = engine.use_chat(ic.chat_template)
    scores, records = score_tasks(tasks, engine, ic, chat, ctx.seed, ctx.metric_mode,
                                  on_task_done=lambda done, rows: log_progress(loggers, done, len(tasks), rows),
                                  explanations=ctx.explanations)
    return write_incontext_run(ctx, scores, records, [e for t in tasks for e in t.test], engine.record())


def draws_on_train(ic) -> bool:
    """Whether the prompts show train rows (demonstrations, LegalBench's base prompts): zero-shot and template
    prompts show none."""
    return ic.strategy not in ("zero_shot", "template")


def train_split_as_scored(tasks: list[Task], ic) -> list[Task]:
    """``prompt.score_split=train``: prompt settings (k, selection, strategy) are tuned on the train
    split, never on test: each train row is scored with demonstrations from the other train rows."""
    from dataclasses import replace

    from legalft.foundation.errors import UserError

    if ic.strategy == "base_prompt":
        raise UserError("prompt.score_split=train: the published base prompts are built from the train rows they "
                        "would score; tune zero_shot or few_shot prompts instead.")
    if any(t.spec.multi_label for t in tasks):
        raise UserError("prompt.score_split=train scores single-label tasks; statute prediction is tuned on its "
                        "validation split (data.test_path=<the Validation folder>).")
    too_small = [t.spec.name for t in tasks if len(t.train) <= ic.k]
    if too_small:
        raise UserError(f"prompt.score_split=train with prompt.k={ic.k}: {', '.join(too_small)} have too few train "
                        "rows to leave k for each scored row's demonstrations.")
    return [replace(t, test=list(t.train)) for t in tasks]


def write_incontext_run(ctx: RunContext, scores: dict, records: list[dict], test_examples, engine_record: dict) -> dict:
    ic = ctx.prompt
    ctx.write_config()
    scored_on = ic.score_split
    return IncontextMethod().publish(
        ctx, scores, records, test_examples, model=ctx.model_choice,
        # a subset of the test split is not the published test set, and the train split is not a test set
        comparable=ctx.whole_test_split and scored_on == "test", scored_on=scored_on,
        pretrained=str(ctx.model.pretrained), prompt=ic.strategy, k=ic.k, selection=ic.selection, answer=ic.answer,
        **engine_record, **({"template_digest": text_digest(ic.template)} if ic.get("template") else {}),
    )


class IncontextMethod(Method):
    """``method=incontext`` (evaluate.py's): a causal LM prompted on each test example."""

    name = "incontext"
    trains = False
    group_settings = {"prompt": PROMPT_SETTINGS}

    @classmethod
    def config_problems(cls, requested) -> list[str]:
        """A prompt needs a causal LM to answer it (rescoring a run and reports read the run's own)."""
        from omegaconf import OmegaConf

        from legalft.models.kinds import ENCODER

        if requested.get("prompt") is None or requested.get("run") is not None or requested.get("report") is not None:
            return []
        if "model" not in requested or OmegaConf.select(requested, "model.kind") == ENCODER:
            return ["prompt=... needs a causal LM to prompt: add model=smollm2 (offline), or model=llama3_8b, "
                    "mistral_7b or qwen2_7b (from the hub)."]
        return []

    @classmethod
    def report_words(cls, info: Mapping) -> list[str]:
        prompt = str(info.get("prompt", "?"))
        if info.get("template_digest"):  # each user template is a prompt of its own
            prompt = f"{prompt}:{info['template_digest']}"
        return [cls.name, str(info.get("model", "?")), prompt, f"k={info.get('k', 0)}", str(info.get("answer", "?"))]

    @classmethod
    def hub_prompt_id(cls, info: Mapping) -> str:
        """``base`` for LegalBench's base prompts, as LegalEvalHub's published runs say; else the strategy; with
        ``-score`` where labels were chosen by their log-likelihood (the published runs generate)."""
        prompt = "base" if info.get("prompt") == "base_prompt" else f"{info.get('prompt', 'prompt')}-k{info.get('k', 0)}"
        return prompt + ("-score" if info.get("answer") == "score" else "")

    def run(self, ctx: RunContext) -> dict:
        """Scores as ``<split>/<task>/<metric>``, what evaluate.py hands a sweeper."""
        split = ctx.prompt.score_split
        return {f"{split}/{task}/{key}": value for task, scores in run_incontext(ctx).items()
                for key, value in scores.items() if isinstance(value, float)}

    def classify(self, ctx: RunContext, examples: list, task: str | None = None) -> Classified:
        """The run's model and prompt on ``examples``: demonstrations drawn from the run's data as when it scored, on
        the engine the command names (``predict.py engine=server ...``) or else the run's own."""
        from dataclasses import replace

        from omegaconf import OmegaConf

        from legalft.llm.engine import open_engine
        from legalft.llm.scoring import prompt_builder, unlabelled_answers

        ic = ctx.prompt
        chosen = chosen_task(ctx.tasks() if draws_on_train(ic) else ctx.test_tasks(), task, ctx.folder.path)
        chosen = replace(chosen, test=examples)
        # the documents answered are not train rows: none is left out of the demonstrations as a scored row would be
        builder = prompt_builder([chosen], OmegaConf.merge(ic, {"score_split": "test"}), ctx.seed)
        engine = open_engine(ctx.answering_engine, ctx.model)
        answers = unlabelled_answers(chosen, engine, ic, engine.use_chat(ic.chat_template), builder)
        return Classified(chosen.spec, None, None, answers=answers)

