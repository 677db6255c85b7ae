"""LoRA and QLoRA adapters (peft, bitsandbytes) on causal LMs, and their thin Lightning wrapper."""

from __future__ import annotations

import torch

from legalft.foundation.errors import UserError
from legalft.models.training_module import TrainingModule


def quantization_config(quantize: str | None, compute_dtype: str):
    """bitsandbytes 4-bit NF4 with double quantisation (QLoRA), or None."""
    if quantize in (None, "none"):
        return None
    if quantize != "nf4":
        raise UserError(f"lora.quantize={quantize!r}: choose none or nf4.")
    try:
        import bitsandbytes  # noqa: F401
        from transformers import BitsAndBytesConfig
    except ImportError as err:
        raise UserError(f"lora.quantize=nf4 needs bitsandbytes, which cannot be imported here ({err}): "
                        "pip install 'bitsandbytes>=0.45', or set lora.quantize=none.") from None
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=getattr(torch, compute_dtype))


def linear_module_names(model) -> list[str]:
    """Names (last component) of the model's linear layers: what LoRA can target."""
    names = {name.rsplit(".", 1)[-1] for name, module in model.named_modules()
             if isinstance(module, torch.nn.Linear) or type(module).__name__.startswith("Linear")}
    return sorted(names - {"lm_head", "score"})  # the output heads: trained in full or not at all


def keep_4bit_weights_trainable(model) -> None:
    """On CPUs with AVX512-BF16, bitsandbytes repacks a 4-bit layer's weights for a faster kernel at
    its first inference-mode call (eval, no grad: a validation pass, a look at the loss), and the
    repacked layer passes no gradient to the adapters above it afterwards: training then silently
    stops learning. A model about to be trained keeps the plain layout, on every CPU alike."""
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):  # bitsandbytes' Linear4bit
            module.support_avx512bf16_for_cpu = False


def add_lora(model, r: int, alpha: int, dropout: float, target_modules: list[str], gradient_checkpointing: bool,
             quantized: bool, task_type: str = "CAUSAL_LM"):
    """LoRA adapters on ``target_modules``; ``task_type`` is peft's: ``CAUSAL_LM``, or ``SEQ_CLS`` for a
    sequence classifier, whose head peft then trains in full and saves with the adapters."""
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    available = linear_module_names(model)
    missing = sorted(set(target_modules) - set(available))
    if missing:
        raise UserError(f"lora.target_modules: {missing} are not layers of this model; it has {available}.")
    if quantized:
        keep_4bit_weights_trainable(model)
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing)
    elif gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(target_modules),
                        task_type=task_type)
    return get_peft_model(model, config)


def trainable_share(model) -> float:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable / sum(p.numel() for p in model.parameters())


def predicts_answer(labels: torch.Tensor) -> torch.Tensor:
    """True at the columns whose next token is an answer token (labels elsewhere are -100): where the
    loss is taken, and what its mean divides by."""
    return labels[:, 1:] != -100


def answer_token_loss(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Summed next-token cross-entropy over the answer tokens (labels elsewhere are -100).

    The vocabulary projection runs only at the columns where some row predicts an answer token: a
    LegalBench answer is a few tokens after hundreds of prompt tokens, and projecting every position
    onto a 50k-word vocabulary (and back-propagating through it) costs a small model a tenth of its
    step and a tenth of its peak memory (SmolLM2-135M, bench/lora_vs_trl.py). The sum equals the model's own loss times the number of answer tokens.
    """
    targets = batch["labels"][:, 1:]  # the logits at column c predict the token at c + 1
    columns = predicts_answer(batch["labels"]).any(dim=0).nonzero().squeeze(1)
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    # no cache: packed batches need it off, training never uses it
    logits = model(**inputs, use_cache=False, logits_to_keep=columns).logits
    return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets[:, columns].flatten(),
                                             ignore_index=-100, reduction="sum")


class CausalLMModule(TrainingModule):
    """Next-token loss on the answer tokens (labels elsewhere are -100); only trainable weights are optimised."""

    def __init__(self, model, lr: float = 2e-4, weight_decay: float = 0.0, warmup_ratio: float = 0.1) -> None:
        super().__init__()
        self.model = model.train()  # loaded for inference in eval mode; Lightning keeps submodules' modes
        self.save_hyperparameters(ignore=["model"])
        self.strict_loading = False  # checkpoints hold the trainable (adapter) weights only

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # The frozen base is the hub's (or the GGUF file's): checkpoints of a 7B model stay megabytes.
        trainable = {name for name, p in self.named_parameters() if p.requires_grad}
        checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in trainable}

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        # The mean over the answer tokens of the whole global batch, not of this rank's slice: ranks hold
        # different numbers of answer tokens, and DDP averages their gradients, so each rank divides its
        # sum by the global count and scales by the world size. One rank or several, the same step.
        answer_tokens = predicts_answer(batch["labels"]).sum()
        global_tokens = self.trainer.strategy.reduce(answer_tokens.float(), reduce_op="sum")
        world = self.trainer.world_size
        loss = answer_token_loss(self.model, batch) / global_tokens * world
        # per step, and averaged per epoch as train/loss_epoch (what a sweep without validation data minimises);
        # the mean over ranks of this rank's share is the global batch's loss
        self.log("train/loss", loss.detach(), prog_bar=True, on_step=True, on_epoch=True, sync_dist=world > 1,
                 batch_size=len(batch["input_ids"]))
        return loss

    def configure_optimizers(self):
        from legalft.models.optimization import adamw_with_linear_warmup

        hp = self.hparams
        params = [p for p in self.model.parameters() if p.requires_grad]
        return adamw_with_linear_warmup(self, params, hp.lr, hp.weight_decay, hp.warmup_ratio)
