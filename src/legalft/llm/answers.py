"""Two ways of reading a causal LM's answer to a prompt.

``generate``: greedy decoding (temperature 0) stopped at the first newline, as LegalBench's
published baselines were run. ``score``: the log-likelihood of each label as the prompt's
continuation; the demonstrations all prompts share run once, each prompt's own part once, and
their key/value cache is reused for every label.
"""

from __future__ import annotations

import inspect

import torch


def cache_keyword(model) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` (5.x); pass it under the model's own name
    (a PEFT model's forward takes ``**kwargs``: its base model's says which)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def output_cache(output):
    return output.cache if getattr(output, "cache", None) is not None else output.past_key_values


def use_chat_template(tokenizer, setting) -> bool:
    """``prompt.chat_template``: auto (when the tokenizer has one), true or false."""
    return {"auto": bool(tokenizer.chat_template), True: True, False: False}[setting]


def apply_chat_template(tokenizer, prompts: list[str]) -> list[str]:
    return [
        tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], max_new_tokens: int = 16, batch_size: int = 8,
             what: str = "generating") -> list[str]:
    """Greedy answers cut at the first newline, decoded by Hugging Face's ``generate``.

    The prompts' common prefix (a task's demonstrations) runs once; every batch starts from a copy of
    its key/value cache, so ``generate`` computes only each prompt's own part and the answer. A row
    reads ``prefix + left padding + own part``: the attention mask skips the padding and ``generate``
    numbers positions from the mask, so each row sees exactly its prompt.
    """
    from legalft.foundation.loop_progress import Progress

    encoded = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    shared, prefix_cache = shared_prefix(model, encoded)
    prefix = torch.tensor([encoded[0][:shared]], dtype=torch.long)  # generate reads the whole rows
    # Longest prompts first, batched with prompts of like length: least padding, and the slowest batch
    # (the most memory) comes first; answers go back to the prompts' order.
    order = sorted(range(len(prompts)), key=lambda i: -len(encoded[i]))
    outputs: list[str] = [""] * len(prompts)
    with Progress(len(prompts), what) as progress:
        for start in range(0, len(prompts), batch_size):
            rows = order[start : start + batch_size]
            own, mask, _ = after_prefix([encoded[i][shared:] for i in rows], shared, tokenizer.pad_token_id)
            ids = torch.cat([prefix.expand(len(rows), -1), own], dim=1).to(model.device)
            mask = mask.to(model.device)
            generated = model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                stop_strings=["\n"], tokenizer=tokenizer, pad_token_id=tokenizer.pad_token_id,
                **prefix_for_batch(model, prefix_cache, len(rows)),
            )
            for i, row in zip(rows, generated[:, ids.shape[1] :]):
                outputs[i] = tokenizer.decode(row, skip_special_tokens=True).split("\n")[0].strip()
            progress.update(len(rows))
    return outputs


def common_prefix_length(sequences: list[list[int]]) -> int:
    """Tokens all sequences start with, leaving each at least one token of its own."""
    shortest = min(len(s) for s in sequences)
    length = 0
    while length < shortest - 1 and all(s[length] == sequences[0][length] for s in sequences):
        length += 1
    return length


def shared_prefix(model, encoded: list[list[int]]) -> tuple[int, object]:
    """How many tokens every prompt starts with, and their key/value cache (None when they share none),
    computed once for all of them."""
    shared = common_prefix_length(encoded)
    if not shared:
        return 0, None
    prefix = torch.tensor([encoded[0][:shared]], dtype=torch.long, device=model.device)
    return shared, output_cache(model(input_ids=prefix, use_cache=True, logits_to_keep=1))


def prefix_for_batch(model, prefix_cache, rows: int) -> dict:
    """The model keyword handing a batch of ``rows`` prompts its own copy of the prefix cache (the
    forward pass extends the cache it is given)."""
    import copy

    if prefix_cache is None:
        return {}
    cache = copy.deepcopy(prefix_cache)
    cache.batch_repeat_interleave(rows)
    return {cache_keyword(model): cache}


def padded(rows: list[list[int]], pad_token_id: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and attention mask, every row ending at the last column (``left`` padding) or
    starting at the first."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_token_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        columns = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, columns] = torch.tensor(row)
        mask[i, columns] = 1
    return ids, mask


def after_prefix(rests: list[list[int]], shared: int, pad_token_id: int) -> tuple[torch.Tensor, ...]:
    """Each prompt's own part after a shared prefix of ``shared`` tokens, left-padded so that all end
    together: (its ids, the attention mask over prefix and own part, the own part's mask)."""
    ids, own_mask = padded(rests, pad_token_id, left=True)
    return ids, torch.cat([torch.ones((len(rests), shared), dtype=torch.long), own_mask], dim=1), own_mask


@torch.no_grad()
def label_log_likelihoods(model, tokenizer, prompts: list[str], labels: list[str], separator: str = " ",
                          batch_size: int | None = None, what: str = "scoring labels") -> torch.Tensor:
    """[prompts, labels]: sum of token log-probabilities of ``separator + label`` after each prompt.

    Each pass reuses the key/value cache of the one before: the prompts' common prefix runs once
    for all of them (a task's few-shot demonstrations, most of a LegalBench prompt); then, per
    batch of ``batch_size`` prompts, each prompt's own remainder as one left-padded batch, and every
    label as one short batch of continuations. Only the logits that are read are computed.
    """
    from legalft.foundation.loop_progress import Progress

    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    shared, prefix_cache = shared_prefix(model, encoded)
    continuations = [tokenizer(separator + label, add_special_tokens=False)["input_ids"] for label in labels]
    batch_size = batch_size or len(prompts)
    scores = []
    with Progress(len(prompts), what) as progress:
        for start in range(0, len(prompts), batch_size):
            rests = [e[shared:] for e in encoded[start : start + batch_size]]
            past = prefix_for_batch(model, prefix_cache, len(rests))
            scores.append(score_batch(model, tokenizer.pad_token_id, rests, shared, past, continuations))
            progress.update(len(rests))
    return torch.cat(scores)


def score_batch(model, pad_token_id: int, rests: list[list[int]], shared: int, past: dict,
                continuations: list[list[int]]) -> torch.Tensor:
    """Label log-likelihoods of a batch of prompts that continue a shared prefix of ``shared`` tokens
    (``past``: the model keyword holding the batch's copy of its cache, empty when there is none)."""
    n_prompts, keyword = len(rests), cache_keyword(model)
    ids, mask, rest_mask = after_prefix(rests, shared, pad_token_id)
    positions = shared + (rest_mask.cumsum(-1) - 1).clamp(min=0)
    ids, mask, positions = ids.to(model.device), mask.to(model.device), positions.to(model.device)
    prompt_out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1,
                       **past)

    n_labels = len(continuations)
    label_ids, label_mask = padded(continuations, pad_token_id, left=False)
    label_width = label_ids.shape[1]
    label_ids, label_mask = label_ids.repeat(n_prompts, 1), label_mask.repeat(n_prompts, 1)  # row p*n_labels + l
    label_ids, label_mask = label_ids.to(model.device), label_mask.to(model.device)

    cache = output_cache(prompt_out)
    cache.batch_repeat_interleave(n_labels)
    attention = torch.cat([mask.repeat_interleave(n_labels, dim=0), label_mask], dim=1)
    start = positions[:, -1:].repeat_interleave(n_labels, dim=0) + 1
    logits = model(input_ids=label_ids, attention_mask=attention,
                   position_ids=start + torch.arange(label_width, device=model.device),
                   use_cache=True, **{keyword: cache}).logits
    # the first label token is predicted by the prompt's last position, the rest by the label's own
    first = prompt_out.logits[:, -1:].repeat_interleave(n_labels, dim=0)
    all_logits = torch.cat([first, logits[:, :-1]], dim=1)
    token_logprobs = all_logits.log_softmax(-1).gather(-1, label_ids.unsqueeze(-1)).squeeze(-1)
    return (token_logprobs * label_mask).sum(dim=1).view(n_prompts, n_labels).float().cpu()
