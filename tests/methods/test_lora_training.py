"""LoRA and QLoRA training on a tiny causal LM: answer-only loss, long examples, regimes, target modules, a loss that
falls with the base frozen, QLoRA steps on the CPU, packed batches."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def tokenizer(tiny_causal_lm_dir):
    from legalft.models.pretrained import load_tokenizer

    return load_tokenizer(str(tiny_causal_lm_dir))


def test_loss_mask_covers_the_answer_tokens_only(tokenizer):
    from legalft.data.instruction_data import IGNORE, tokenize_example

    example = tokenize_example(tokenizer, "Q: Is there hearsay?\nAnswer:", "Yes", chat=False, max_length=512)
    prompt_ids = tokenizer("Q: Is there hearsay?\nAnswer:", add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(" Yes" + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    assert example.input_ids == prompt_ids + answer_ids and example.cut == 0
    assert example.labels[: len(prompt_ids)] == [IGNORE] * len(prompt_ids)
    assert example.labels[len(prompt_ids):] == answer_ids


def test_long_examples_lose_the_start_of_their_prompt(tokenizer, caplog):
    from legalft.data.instruction_data import report_cuts, tokenize_example
    from legalft.foundation.errors import UserError

    prompt = "statement number " * 40 + "\nAnswer:"
    full = tokenize_example(tokenizer, prompt, "No", chat=False, max_length=10_000)
    cut = tokenize_example(tokenizer, prompt, "No", chat=False, max_length=32)
    assert len(cut.input_ids) == 32 and cut.cut == len(full.input_ids) - 32
    assert cut.input_ids == full.input_ids[cut.cut:] and cut.labels[-3:] == full.labels[-3:]
    report_cuts([full, cut], ["hearsay/1", "hearsay/2"], 32)
    assert "1 of 2 training examples are longer than model.max_length=32" in caplog.text and "hearsay/2" in caplog.text
    with pytest.raises(UserError, match="leaves no room for its prompt"):
        tokenize_example(tokenizer, prompt, "No " * 40, chat=False, max_length=16)


def test_regimes_select_the_right_tasks():
    from legalft.methods.lora.plan import training_groups
    from legalft.foundation.errors import UserError

    names = ["hearsay", "abercrombie", "proa"]
    assert training_groups(names, "pooled", None) == [("pooled", names, names)]
    assert training_groups(names, "per_task", None)[1] == ("abercrombie", ["abercrombie"], ["abercrombie"])
    assert training_groups(names, "leave_one_out", "hearsay") == [("without_hearsay", ["abercrombie", "proa"], ["hearsay"])]
    with pytest.raises(UserError, match="needs method.heldout"):
        training_groups(names, "leave_one_out", None)
    with pytest.raises(UserError, match="method.regime='kfold'"):
        training_groups(names, "kfold", None)


def test_unknown_target_module_lists_the_models_layers(tiny_causal_lm_dir):
    from legalft.foundation.errors import UserError
    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import add_lora

    model, _ = load_causal_lm(str(tiny_causal_lm_dir))
    with pytest.raises(UserError, match=r"\['query'\] are not layers of this model; it has \[.*'q_proj'.*\]"):
        add_lora(model, 4, 8, 0.0, ["q_proj", "query"], False, False)


def fit_lora(model, tokenizer, epochs: int, quantized: bool = False):
    import lightning as L

    from legalft.data.instruction_data import InstructionDataModule, collate, tokenize_example
    from legalft.models.lora import CausalLMModule, add_lora

    torch.manual_seed(0)
    model = add_lora(model, 8, 16, 0.0, ["q_proj", "v_proj", "up_proj"], False, quantized)
    examples = [tokenize_example(tokenizer, f"Q: statement number {i}\nAnswer:", "Yes" if i % 2 else "No", False, 64)
                for i in range(8)]
    batch = collate(examples, tokenizer.pad_token_id)
    with torch.no_grad():
        before = model(**batch).loss.item()
    trainer = L.Trainer(max_epochs=epochs, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(CausalLMModule(model, lr=1e-2, warmup_ratio=0.0), datamodule=InstructionDataModule(examples, tokenizer.pad_token_id, 4))
    model.eval()
    with torch.no_grad():
        after = model(**batch).loss.item()
    return model, before, after


def test_lora_loss_falls_and_the_base_stays_frozen(tiny_causal_lm_dir, tmp_path):
    from legalft.llm.answers import label_log_likelihoods
    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import trainable_share

    model, tokenizer = load_causal_lm(str(tiny_causal_lm_dir))
    base_weight = model.model.layers[0].self_attn.q_proj.weight.clone()
    model, before, after = fit_lora(model, tokenizer, epochs=15)
    assert after < before * 0.5
    assert 0 < trainable_share(model) < 0.2
    torch.testing.assert_close(model.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight, base_weight)

    # the adapter alone is saved, and reloaded on a fresh base it predicts the same
    model.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size < 200_000
    from peft import PeftModel

    fresh, _ = load_causal_lm(str(tiny_causal_lm_dir))
    reloaded = PeftModel.from_pretrained(fresh, tmp_path / "adapter").eval()
    prompt = "Q: statement number 3\nAnswer:"
    torch.testing.assert_close(label_log_likelihoods(model, tokenizer, [prompt], ["Yes", "No"]),
                               label_log_likelihoods(reloaded, tokenizer, [prompt], ["Yes", "No"]))
    # merged into the base, the same predictions again
    merged = reloaded.merge_and_unload()
    torch.testing.assert_close(label_log_likelihoods(merged, tokenizer, [prompt], ["Yes", "No"]),
                               label_log_likelihoods(model, tokenizer, [prompt], ["Yes", "No"]), atol=1e-4, rtol=1e-4)


def test_qlora_step_on_cpu(tiny_causal_lm_dir):
    pytest.importorskip("bitsandbytes")
    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import quantization_config

    model, tokenizer = load_causal_lm(str(tiny_causal_lm_dir), quantization_config=quantization_config("nf4", "float32"))
    assert type(model.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    model, before, after = fit_lora(model, tokenizer, epochs=3, quantized=True)
    assert after < before


@pytest.mark.slow
def test_qlora_steps_on_the_offline_smollm2(tmp_path):
    """The real model's widths (576, 1536) on bitsandbytes' 4-bit path, whichever CPU this lands on."""
    pytest.importorskip("bitsandbytes")
    from legalft.models.causal_lm import load_causal_lm, offline_smollm2_gguf
    from legalft.models.lora import quantization_config

    # transformers quantizes a float checkpoint, not a GGUF file: save the dequantised model as one first
    folder = tmp_path / "smollm2"
    model, tokenizer = load_causal_lm(offline_smollm2_gguf())
    model.hf_quantizer = None
    del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    model, tokenizer = load_causal_lm(str(folder), quantization_config=quantization_config("nf4", "float32"))
    assert type(model.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    model, before, after = fit_lora(model, tokenizer, epochs=1, quantized=True)
    lora_b = [p for name, p in model.named_parameters() if "lora_B" in name]
    assert all(p.abs().sum() > 0 for p in lora_b), "an adapter received no update"
    assert after < before


def test_packed_batches_give_the_padded_loss(tiny_causal_lm_dir):
    """Packing puts a batch's examples end to end without padding; with position ids restarting per
    example, attention stays inside each one, so the loss equals the padded batch's."""
    from legalft.data.instruction_data import InstructionDataModule, tokenize_example
    from legalft.models.causal_lm import load_causal_lm

    model, tokenizer = load_causal_lm(str(tiny_causal_lm_dir))
    model.eval()
    examples = [tokenize_example(tokenizer, f"Q: statement number {'very ' * i}{i}\nA:", answer, False, 64)
                for i, answer in enumerate(["Yes", "No", "Yes", "No"])]
    padded_module = InstructionDataModule(examples, tokenizer.pad_token_id, batch_size=4)
    packed_module = InstructionDataModule(examples, tokenizer.pad_token_id, batch_size=4, packing=True)
    padded = padded_module.collate_fn()(examples)
    packed = packed_module.collate_fn()(examples)
    assert packed["input_ids"].shape == (1, sum(len(e.input_ids) for e in examples))
    assert "attention_mask" not in packed and (packed["input_ids"] != tokenizer.pad_token_id).all()
    with torch.no_grad():
        padded_loss = model(**padded, use_cache=False).loss
        packed_loss = model(**packed, use_cache=False).loss
        leaking = model(input_ids=packed["input_ids"], labels=packed["labels"], use_cache=False).loss
    torch.testing.assert_close(packed_loss, padded_loss, atol=1e-5, rtol=1e-5)
    assert abs(leaking.item() - padded_loss.item()) > 1e-4  # without the position ids, examples would see each other


def test_answer_token_loss_projects_only_answer_columns_and_equals_the_models_loss(tiny_causal_lm_dir):
    """The training loss projects onto the vocabulary only where an answer token is predicted; its
    value and its gradients equal the model's full-logits loss, padded and packed."""
    from legalft.data.instruction_data import InstructionDataModule, tokenize_example
    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import answer_token_loss

    model, tokenizer = load_causal_lm(str(tiny_causal_lm_dir))
    model.eval()
    examples = [tokenize_example(tokenizer, f"Q: statement number {'very ' * i}{i}\nA:", answer, False, 64)
                for i, answer in enumerate(["Yes", "No", "Not sure", "No"])]
    for packing in (False, True):
        batch = InstructionDataModule(examples, tokenizer.pad_token_id, batch_size=4, packing=packing).collate_fn()(examples)
        answer_tokens = int((batch["labels"][:, 1:] != -100).sum())
        kept = []
        handle = model.lm_head.register_forward_hook(lambda module, args, out: kept.append(args[0].shape[1]))
        ours = answer_token_loss(model, batch)
        handle.remove()
        assert kept[0] < batch["input_ids"].shape[1] // 2  # far fewer columns than the sequence
        ours_grads = torch.autograd.grad(ours / answer_tokens, model.lm_head.weight)[0]
        theirs = model(**batch, use_cache=False).loss
        torch.testing.assert_close(ours / answer_tokens, theirs, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ours_grads, torch.autograd.grad(theirs, model.lm_head.weight)[0], atol=1e-6, rtol=1e-4)
