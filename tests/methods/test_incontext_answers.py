"""Answers of a causal LM in context, on a tiny model: label scoring reuses the prompt's cache, generation is greedy
and stops at a newline; answers are read and scored strictly and flexibly; prompts in or out of the chat template."""

from __future__ import annotations

import pytest
import torch

from conftest import ROOT


@pytest.fixture(scope="module")
def tiny_lm(tiny_causal_lm_dir):
    from legalft.models.causal_lm import load_causal_lm

    return load_causal_lm(str(tiny_causal_lm_dir))


def test_cached_label_scores_equal_full_forward_passes(tiny_lm):
    from legalft.llm.answers import label_log_likelihoods

    model, tokenizer = tiny_lm
    prompts = ["Q: The accused threatened the witness. Is there hearsay?\nA:", "Q: A mob attacked.\nA:"]
    labels = ["Yes", "No", "Not sure at all"]
    cached = label_log_likelihoods(model, tokenizer, prompts, labels)  # one left-padded batch of prompts
    assert cached.shape == (2, 3)
    for prompt, row in zip(prompts, cached):
        prefix = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        for label, score in zip(labels, row):
            continuation = tokenizer(" " + label, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logprobs = model(torch.tensor([prefix + continuation])).logits.log_softmax(-1)[0]
            expected = sum(logprobs[len(prefix) + i - 1, t] for i, t in enumerate(continuation))
            assert float(score) == pytest.approx(float(expected), abs=1e-4)


def test_shared_demonstrations_run_once_and_scores_stay_exact(tiny_lm):
    from legalft.llm.answers import common_prefix_length, label_log_likelihoods

    model, tokenizer = tiny_lm
    demonstrations = "Q: A mob attacked the shop.\nA: Yes\n\nQ: The witness repeated a rumour.\nA: No\n\n"
    prompts = [demonstrations + f"Q: {text}\nA:" for text in ("short one", "a much longer question about the facts")]
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    assert common_prefix_length(encoded) >= len(tokenizer(demonstrations, add_special_tokens=False)["input_ids"]) - 1
    assert common_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2  # each prompt keeps a token of its own
    cached = label_log_likelihoods(model, tokenizer, prompts, ["Yes", "No"])
    for prompt, row in zip(prompts, cached):
        alone = label_log_likelihoods(model, tokenizer, [prompt], ["Yes", "No"])[0]  # nothing shared but itself
        torch.testing.assert_close(row, alone, atol=1e-4, rtol=1e-4)
        prefix = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        continuation = tokenizer(" Yes", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logprobs = model(torch.tensor([prefix + continuation])).logits.log_softmax(-1)[0]
        expected = sum(logprobs[len(prefix) + i - 1, t] for i, t in enumerate(continuation))
        assert float(row[0]) == pytest.approx(float(expected), abs=1e-4)


def test_generation_is_greedy_and_cut_at_newline(tiny_lm):
    from legalft.llm.answers import generate

    model, tokenizer = tiny_lm
    prompts = ["Q: The mob attacked.\nA:", "Q: short\nA:"]
    first = generate(model, tokenizer, prompts, max_new_tokens=12, batch_size=2)
    assert first == generate(model, tokenizer, prompts, max_new_tokens=12, batch_size=1)  # padding changes nothing
    assert all("\n" not in g for g in first)


def test_generation_from_the_shared_prefix_cache_equals_each_prompt_alone(tiny_lm):
    from legalft.llm.answers import generate

    model, tokenizer = tiny_lm
    demonstrations = "Q: A mob attacked the shop.\nA: Yes\n\nQ: The witness repeated a rumour.\nA: No\n\n"
    prompts = [demonstrations + f"Q: {text}\nA:" for text in ("short one", "a much longer question about it", "x")]
    cached = generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=2)
    for prompt, answer in zip(prompts, cached):
        ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            alone = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=8,
                                   do_sample=False, pad_token_id=tokenizer.pad_token_id)
        assert answer == tokenizer.decode(alone[0, ids.shape[1] :], skip_special_tokens=True).split("\n")[0].strip()
    assert any(cached)  # the tiny model does answer something
    assert generate(model, tokenizer, prompts[:1], max_new_tokens=8) == cached[:1]  # one prompt: all but its last token cached


def test_completion_prompts_stay_out_of_the_chat_template_and_instructions_go_in():
    """LegalBench's base prompts end where the answer starts: in a chat turn an instruct model answers in
    sentences, which name no label (SmolLM2 scored 0.000 on hearsay that way)."""
    from hydra import compose, initialize_config_dir

    from conftest import ROOT

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        chosen = {prompt: compose("evaluate", [f"prompt={prompt}", "model=smollm2"]).prompt.chat_template
                  for prompt in ("base_prompt", "zero_shot", "knn", "proslex_zeroshot", "proslex_fewshot")}
    assert chosen == {"base_prompt": False, "zero_shot": "auto", "knn": "auto", "proslex_zeroshot": "auto",
                      "proslex_fewshot": "auto"}


def test_a_task_whose_generations_mostly_name_no_label_is_warned_about(caplog):
    from legalft.llm.scoring import warn_if_mostly_invalid

    warn_if_mostly_invalid("hearsay", 1, 8, chat=True)
    assert not caplog.records  # one in eight (12.5%): under the 20% threshold
    warn_if_mostly_invalid("hearsay", 2, 8, chat=True)
    assert "hearsay: 2 of 8 generations name no label" in caplog.text and "prompt.chat_template=false" in caplog.text
    assert "prompt.max_new_tokens" in caplog.text
    caplog.clear()
    warn_if_mostly_invalid("hearsay", 8, 8, chat=False)
    assert "8 of 8" in caplog.text and "chat_template" not in caplog.text  # no chat template to blame


def test_the_flexible_reading_takes_the_first_label_an_output_states():
    from legalft.llm.scoring import first_label_stated

    labels = ("Yes", "No")
    assert first_label_stated("The answer to your question is: No", labels) == "No"
    assert first_label_stated("No, yes.", labels) == "No"
    assert first_label_stated("Yes; no", labels) == "Yes"
    assert first_label_stated("Nothing to say", labels) is None  # whole words only: "Nothing" is not "No"
    assert first_label_stated("It is not hearsay.", ("Hearsay", "Not hearsay")) == "Not hearsay"
    assert first_label_stated("generic mark", ("generic", "descriptive")) == "generic"


def test_generated_answers_are_scored_strictly_and_flexibly(tmp_path):
    """The official number reads the whole output as the label (LegalBench's exact match); the flexible
    reading scores the first label stated. Outputs written here stand in for a model's."""
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.llm.scoring import legalbench_incontext

    class Written:  # an engine that answers what the test wrote
        outputs = ["No", "The answer is: Yes", "yes", "I cannot say", "Answer: No."]

        def generate(self, prompts, **kwargs):
            return list(self.outputs[:len(prompts)])

    class Builder:
        def build(self, task, rows):
            return [e.text for e in rows]

    from omegaconf import OmegaConf

    spec = TaskSpec(name="hearsay", labels=("No", "Yes"), multi_label=False, metric="balanced_accuracy",
                    category="interpretation")
    gold = ["No", "Yes", "Yes", "No", "No"]
    test = [Example(id=str(i), text=f"row {i}", labels=(label,)) for i, label in enumerate(gold)]
    task = Task(spec=spec, train=[], test=test)
    ic = OmegaConf.create({"answer": "generate", "max_new_tokens": 8, "batch_size": 2})
    scores, records = legalbench_incontext([task], Written(), ic, False, Builder(), "paper")
    hearsay = scores["hearsay"]
    # strict: "No" (right), "yes" (right), the rest unread: No recall 1/3, Yes recall 1/2
    assert hearsay["balanced_accuracy"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert hearsay["invalid_outputs"] == 3 and hearsay["read_strict"] == pytest.approx(2 / 5)
    # flexible: No, Yes, Yes, unread, No: No recall 2/3, Yes recall 1
    assert hearsay["balanced_accuracy_flexible"] == pytest.approx((2 / 3 + 1) / 2)
    assert hearsay["read_flexible"] == pytest.approx(4 / 5)
    assert [r.get("prediction_flexible") for r in records] == ["No", "Yes", "Yes", None, "No"]
    assert [r["prediction"] for r in records][:3] == ["No", "The answer is: Yes", "Yes"]
