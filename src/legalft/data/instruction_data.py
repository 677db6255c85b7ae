"""Instruction-tuning examples for causal LMs: the task's zero-shot prompt (the in-context runner's
template without demonstrations) followed by the answer, with the loss on the answer tokens only."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

import lightning as L
import torch
from torch.utils.data import DataLoader

from legalft.data.batches import ResumableBatches
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
IGNORE = -100  # label of positions that carry no loss (prompt and padding)


@dataclass(frozen=True)
class TokenizedExample:
    input_ids: list[int]
    labels: list[int]
    cut: int  # prompt tokens dropped from the front to fit the context


def prompt_and_answer_texts(tokenizer, prompt: str, answer: str, chat: bool) -> tuple[str, str]:
    """The exact text before the answer, and the answer with its end-of-turn marker."""
    if not chat:
        return prompt, " " + answer + tokenizer.eos_token
    prompt_text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                add_generation_prompt=True)
    full = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}], tokenize=False
    )
    if not full.startswith(prompt_text):
        raise UserError("the model's chat template renders the prompt differently with and without the answer: "
                        "set prompt.chat_template=false to train on plain prompts.")
    return prompt_text, full[len(prompt_text):]


def tokenize_example(tokenizer, prompt: str, answer: str, chat: bool, max_length: int) -> TokenizedExample:
    """Prompt and answer tokenised separately, as label scoring reads them; an example over
    ``max_length`` loses the start of its prompt, never the answer."""
    prompt_text, answer_text = prompt_and_answer_texts(tokenizer, prompt, answer, chat)
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(answer_text, add_special_tokens=False)["input_ids"]
    cut = max(0, len(prompt_ids) + len(answer_ids) - max_length)
    if cut >= len(prompt_ids):
        raise UserError(f"an answer of {len(answer_ids)} tokens leaves no room for its prompt in model.max_length={max_length}.")
    prompt_ids = prompt_ids[cut:]
    return TokenizedExample(prompt_ids + answer_ids, [IGNORE] * len(prompt_ids) + answer_ids, cut)


def report_cuts(examples: list[TokenizedExample], names: list[str], max_length: int) -> None:
    cut = [(name, e.cut) for name, e in zip(names, examples) if e.cut]
    if cut:
        log.warning(
            "%d of %d training examples are longer than model.max_length=%d: the start of their prompts was cut "
            "(%d tokens in all; first: %s)", len(cut), len(examples), max_length, sum(c for _, c in cut),
            ", ".join(f"{n} -{c}" for n, c in cut[:5]),
        )


def collate(examples: list[TokenizedExample], pad_token_id: int) -> dict[str, torch.Tensor]:
    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_token_id)
    labels = torch.full((len(examples), width), IGNORE)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        input_ids[i, : len(e.input_ids)] = torch.tensor(e.input_ids)
        labels[i, : len(e.labels)] = torch.tensor(e.labels)
        attention[i, : len(e.input_ids)] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention}


class InstructionDataModule(L.LightningDataModule):
    """Training batches of instruction examples: padded to the batch's longest example, or packed
    (``packing=True``): the batch's examples end to end in one row, no padding, with position ids
    restarting at each example so attention stays within it (transformers' padding-free format)."""

    def __init__(self, examples: list[TokenizedExample], pad_token_id: int, batch_size: int = 4, num_workers: int = 0,
                 seed: int = 0, packing: bool = False) -> None:
        super().__init__()
        self.examples, self.pad_token_id = examples, pad_token_id
        self.batch_size, self.num_workers, self.seed, self.packing = batch_size, num_workers, seed, packing

    def collate_fn(self):
        if not self.packing:
            return partial(collate, pad_token_id=self.pad_token_id)
        from transformers import DataCollatorWithFlattening

        flatten = DataCollatorWithFlattening(return_position_ids=True)
        return lambda batch: flatten([{"input_ids": e.input_ids, "labels": e.labels} for e in batch])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.examples, batch_sampler=ResumableBatches(len(self.examples), self.batch_size, self.seed),
                          num_workers=self.num_workers, generator=torch.Generator().manual_seed(self.seed),
                          collate_fn=self.collate_fn())
