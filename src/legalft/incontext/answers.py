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
def label_log_likelihoods(model, tokenizer, prompt: str, labels: list[str], separator: str = " ") -> torch.Tensor:
    """Sum of token log-probabilities of ``separator + label`` after ``prompt``, for each label."""
    prefix = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    prefix_out = model(input_ids=prefix, use_cache=True)
    continuations = [tokenizer(separator + label, add_special_tokens=False)["input_ids"] for label in labels]
    width = max(len(c) for c in continuations)
    ids = torch.full((len(labels), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(labels), width), dtype=torch.long)
    for i, c in enumerate(continuations):
        ids[i, : len(c)] = torch.tensor(c)
        mask[i, : len(c)] = 1
    cache = output_cache(prefix_out)
    cache.batch_repeat_interleave(len(labels))
    attention = torch.cat([torch.ones((len(labels), prefix.shape[1]), dtype=torch.long), mask], dim=1)
    logits = model(input_ids=ids, attention_mask=attention, use_cache=True, **{cache_keyword(model): cache}).logits
    # the first label token is predicted by the prompt's last position, the rest by the label's own
    all_logits = torch.cat([prefix_out.logits[:, -1:].expand(len(labels), -1, -1), logits[:, :-1]], dim=1)
    token_logprobs = all_logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return (token_logprobs * mask).sum(dim=1)
