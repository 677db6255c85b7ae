"""How a LoRA run's adapters are scored: zero-shot prompts, as they were trained (``scored``), answered in this
process right after training (``local_engine``) or, for saved adapters, by one engine per adapter.

``SwitchedAdapters``: in this process, the base model loaded once and each adapter loaded beside it,
made active, scored and dropped (PEFT's multi-adapter loading), instead of reloading the base for
each of a per-task run's up to 162 adapters. The base stays loaded after the run: the next LoRA run
this process rescores on the same base (``evaluate.py -m run=A,B,...``, a study's runs) switches to
its adapters too, so a study of LoRA runs loads its base once. ``ServedAdapters``: through an OpenAI-compatible server
that serves the adapters under their names (vLLM ``--enable-lora --lora-modules <adapter>=<folder>``),
checking first that the adapter changes the server's answers: a server that ignores the adapter
returns the base model's, silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from legalft.data.example import Task
from legalft.foundation.errors import UserError
from legalft.methods.lora.plan import Adapter
from legalft.runs.folder import RunFolder

log = logging.getLogger(__name__)
CHECKED_ROWS = 8


@dataclass
class LoadedBase:
    key: str  # the model settings it was loaded with
    model: object  # a PeftModel holding one adapter at a time
    tokenizer: object
    active: str


_loaded: LoadedBase | None = None  # one base at a time, kept between the runs this process rescores


class SwitchedAdapters:
    def __init__(self, run: RunFolder, model_cfg, quantize: str | None) -> None:
        self.run, self.model_cfg, self.quantize = run, model_cfg, quantize

    @property
    def model(self):
        return _loaded.model if _loaded is not None else None

    def engine_for(self, adapter: Adapter):
        global _loaded
        from omegaconf import OmegaConf

        from legalft.training.checkpoints import refusing_code
        from legalft.llm.engine import LocalEngine
        from legalft.methods.lora.adapters import load_base
        from legalft.models.adapter_files import check_base
        from legalft.models.causal_lm import to_accelerator

        folder = self.run.require(self.run.adapter(adapter.name), f"adapter {adapter.name!r}")
        check_base(folder, self.model_cfg)
        key = OmegaConf.to_yaml(OmegaConf.create({"model": self.model_cfg, "quantize": self.quantize}), resolve=True)
        with refusing_code(folder):  # a pickled adapter_model.bin
            if _loaded is None or _loaded.key != key:
                from peft import PeftModel

                _loaded = None  # the other base goes before this one loads
                log.info("loading the base model %s", self.model_cfg.pretrained)
                base, tokenizer = load_base(self.model_cfg, self.quantize)
                model = PeftModel.from_pretrained(base, folder, adapter_name=adapter.name)
                _loaded = LoadedBase(key, model, tokenizer, adapter.name)
            else:
                # another run's adapter may hold this name: PEFT names must differ while both are loaded
                name = adapter.name if adapter.name != _loaded.active else f"{adapter.name}_next"
                _loaded.model.load_adapter(folder, adapter_name=name)
                _loaded.model.set_adapter(name)
                _loaded.model.delete_adapter(_loaded.active)  # one adapter in memory at a time
                _loaded.active = name
                log.info("adapter %s: switched in on the base model already loaded", adapter.name)
        _loaded.model = to_accelerator(_loaded.model.eval())
        return LocalEngine(_loaded.model, _loaded.tokenizer)


class ServedAdapters:
    def __init__(self, engine_cfg, model_cfg, prompt_cfg) -> None:
        from legalft.llm.engine import server_engine

        self.prompt_cfg, self.base = prompt_cfg, server_engine(engine_cfg, str(model_cfg.pretrained))

    def engine_for(self, adapter: Adapter):
        engine = self.base.serving(adapter.name)
        scored = [t for t in adapter.scored if t.test]
        if scored:
            check_applied(self.base, engine, scored[0], self.prompt_cfg)
        return engine


def check_applied(base, served, task, prompt_cfg) -> None:
    """Stops the run when the served adapter answers the first rows of ``task`` exactly as the base model
    does: the same first answer token with the same log-probability (to 1e-4) on every row. A trained
    adapter moves those log-probabilities; a server that ignores it does not."""
    from legalft.methods.lora.fitting import adapter_prompts

    rows = task.test[:CHECKED_ROWS]
    prompts = adapter_prompts(prompt_cfg).build(task, rows)
    chat = base.use_chat(prompt_cfg.chat_template)
    what = f"{served.model}: checking the served adapter"
    pairs = zip(base.first_tokens(prompts, what, chat), served.first_tokens(prompts, what, chat))
    same = all(a_text == b_text and (a_lp is None or b_lp is None or abs(a_lp - b_lp) < 1e-4)
               for (a_text, a_lp), (b_text, b_lp) in pairs)
    if same:
        raise UserError(f"engine.model={base.model!r} and the adapter {served.model!r} give the same answers on the first "
                        f"{len(rows)} rows of {task.spec.name}: the server is not applying the adapter. Serve it with "
                        f"vLLM's --enable-lora --lora-modules {served.model}=<run folder>/adapters/{served.model} (and "
                        "--max-lora-rank at least lora.r), then rerun.")
    log.info("adapter %s: the server applies it (its answers differ from the base model's)", served.model)


def local_engine(model, tokenizer):
    """A trained adapter's answers, in this process."""
    from legalft.llm.engine import LocalEngine
    from legalft.models.causal_lm import to_accelerator

    return LocalEngine(to_accelerator(model.eval()), tokenizer)  # Lightning hands it back on the CPU


def scored(ctx, answers, tasks: list[Task]) -> tuple[dict, list[dict]]:
    """(scores per task, prediction records) of ``answers`` to ``tasks``' test splits, prompted zero-shot
    as the adapters were trained."""
    from legalft.llm.scoring import score_tasks
    from legalft.methods.lora.fitting import adapter_prompts

    chat = answers.use_chat(ctx.prompt.chat_template)
    return score_tasks(tasks, answers, ctx.prompt, chat, ctx.seed, ctx.metric_mode, builder=adapter_prompts(ctx.prompt),
                       explanations=ctx.explanations)
