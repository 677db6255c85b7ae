"""Training one adapter: its examples (prompt, answer-only loss), fitting and resuming."""

from __future__ import annotations

import logging
from pathlib import Path

from legalft.data.example import Task

log = logging.getLogger(__name__)


def adapter_prompts(prompt_cfg):
    """How an adapter is prompted, in training and in scoring alike (so a run is scored as it was prompted, by
    construction): zero-shot, a label-set task's facts cut to ``prompt.max_input_words``, asking for quotes where
    ``prompt.explain`` says (``legalft.llm.prompts.PromptBuilder``)."""
    from legalft.llm.prompts import PromptBuilder

    return PromptBuilder("zero_shot", **{key: prompt_cfg[key] for key in ("max_input_words", "explain") if key in prompt_cfg})


def training_examples(tasks: list[Task], tokenizer, chat: bool, max_length: int, prompt_cfg) -> list:
    """Each task's train split as prompt (``adapter_prompts``) + answer: the label for single-label tasks; for
    multi-label tasks the labels (and quotes, with ``explain``)."""
    from legalft.data.instruction_data import report_cuts, tokenize_example
    from legalft.llm.label_set_prompts import format_answer

    examples, names, builder = [], [], adapter_prompts(prompt_cfg)
    for task in tasks:
        prompts = builder.build(task, task.train)
        if task.spec.multi_label:
            answers = [format_answer(example, builder.explain) for example in task.train]
        else:
            answers = [example.labels[0] for example in task.train]
        examples += [tokenize_example(tokenizer, prompt, answer, chat, max_length)
                     for prompt, answer in zip(prompts, answers)]
        names += [f"{task.spec.name}/{example.id}" for example in task.train]
    report_cuts(examples, names, max_length)
    return examples


def fit(ctx, optimiser: dict, last_checkpoint: Path, model, tokenizer, examples) -> tuple:
    """Train one adapter with AdamW set by ``optimiser`` (lr, weight_decay, warmup_ratio), resumable:
    its checkpoint (adapter weights and optimizer state only) is ``last_checkpoint``, and a rerun or
    requeued job continues from it. ``ctx``: the run's ``RunContext`` (its trainer, seed and batching).
    Returns (trainer, training metrics)."""
    from legalft.data.instruction_data import InstructionDataModule
    from legalft.kit.trained import TrainedMethod
    from legalft.models.lora import CausalLMModule

    module = CausalLMModule(model, **optimiser)
    # per adapter, so built here rather than from conf/callbacks
    trainer = ctx.trainer(TrainedMethod.resume_callbacks(last_checkpoint), default_root_dir=str(last_checkpoint.parent))
    datamodule = InstructionDataModule(examples, tokenizer.pad_token_id, ctx.datamodule.batch_size, seed=ctx.seed,
                                       packing=ctx.datamodule.get("packing", False))
    fitted = TrainedMethod.fit(trainer, module, datamodule, last_checkpoint)
    return fitted.trainer, fitted.metrics


def train_adapter(ctx, optimiser: dict, tasks: list[Task], last_checkpoint):
    """(trainer, model, tokenizer, training metrics) of a new adapter trained on ``tasks``' train splits,
    resumable from ``last_checkpoint``."""
    from legalft.llm.answers import use_chat_template
    from legalft.methods.lora.adapters import new_adapter

    model, tokenizer = new_adapter(ctx.model, ctx.lora)
    chat = use_chat_template(tokenizer, ctx.prompt.chat_template)
    examples = training_examples(tasks, tokenizer, chat, ctx.model.max_length, ctx.prompt)
    trainer, metrics = fit(ctx, optimiser, last_checkpoint, model, tokenizer, examples)
    return trainer, model, tokenizer, metrics
