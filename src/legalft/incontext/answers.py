"""Two ways of reading a causal LM's answer to a prompt.

``generate``: greedy decoding (temperature 0) stopped at the first newline, as LegalBench's
published baselines were run. ``score``: the log-likelihood of each label as the prompt's
continuation; the prompt is run once and its key/value cache reused for every label, so the cost
is one pass over the prompt plus one short batched pass over the labels.
"""

from __future__ import annotations

import inspect

import torch


def cache_keyword(model) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` (5.x); pass it under the model's own name."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def output_cache(output):
    return output.cache if getattr(output, "cache", None) is not None else output.past_key_values


def use_chat_template(tokenizer, setting) -> bool:
    """``incontext.chat_template``: auto (when the tokenizer has one), true or false."""
    return {"auto": bool(tokenizer.chat_template), True: True, False: False}[setting]


def apply_chat_template(tokenizer, prompts: list[str]) -> list[str]:
    return [
        tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], max_new_tokens: int = 16, batch_size: int = 8) -> list[str]:
    tokenizer.padding_side = "left"  # generation continues from the right end of every row
    outputs = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[start : start + batch_size], return_tensors="pt", padding=True,
                          add_special_tokens=False)
        generated = model.generate(
            **batch, max_new_tokens=max_new_tokens, do_sample=False, stop_strings=["\n"], tokenizer=tokenizer,
            pad_token_id=tokenizer.pad_token_id,
        )
        for row in generated[:, batch["input_ids"].shape[1] :]:
            outputs.append(tokenizer.decode(row, skip_special_tokens=True).split("\n")[0].strip())
    return outputs


@torch.no_grad()
def label_log_likelihoods(model, tokenizer, prompts: list[str], labels: list[str], separator: str = " ") -> torch.Tensor:
    """[prompts, labels]: sum of token log-probabilities of ``separator + label`` after each prompt.

    The prompts run once, as one left-padded batch; their key/value cache is then repeated for the
    labels, which run as one short batch of continuations.
    """
    tokenizer.padding_side = "left"  # every prompt ends at the last column, where its labels begin
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    mask = batch["attention_mask"]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    prefix_out = model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=positions, use_cache=True)

    continuations = [tokenizer(separator + label, add_special_tokens=False)["input_ids"] for label in labels]
    n_prompts, n_labels, width = len(prompts), len(labels), max(len(c) for c in continuations)
    ids = torch.full((n_labels, width), tokenizer.pad_token_id)
    label_mask = torch.zeros((n_labels, width), dtype=torch.long)
    for i, c in enumerate(continuations):
        ids[i, : len(c)] = torch.tensor(c)
        label_mask[i, : len(c)] = 1
    ids, label_mask = ids.repeat(n_prompts, 1), label_mask.repeat(n_prompts, 1)  # row p*n_labels + l

    cache = output_cache(prefix_out)
    cache.batch_repeat_interleave(n_labels)
    attention = torch.cat([mask.repeat_interleave(n_labels, dim=0), label_mask], dim=1)
    start = positions[:, -1:].repeat_interleave(n_labels, dim=0) + 1
    logits = model(input_ids=ids, attention_mask=attention, position_ids=start + torch.arange(width), use_cache=True,
                   **{cache_keyword(model): cache}).logits
    # the first label token is predicted by the prompt's last position, the rest by the label's own
    first = prefix_out.logits[:, -1:].repeat_interleave(n_labels, dim=0)
    all_logits = torch.cat([first, logits[:, :-1]], dim=1)
    token_logprobs = all_logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return (token_logprobs * label_mask).sum(dim=1).view(n_prompts, n_labels)
