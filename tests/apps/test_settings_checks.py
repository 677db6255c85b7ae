"""Settings checked before anything is written: each bad setting named in one message before a folder or torch exists,
W&B offline at once without its server, an unreachable hub said at once."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from omegaconf import OmegaConf

from conftest import ROOT
from legalft.foundation.errors import UserError


# --- settings checked before anything is written ---------------------------------------------------------
@pytest.mark.parametrize("override, message", [
    ("trainer.max_epochs=abc", r"trainer.max_epochs='abc': must be a whole number of epochs"),
    ("model.max_length=32", r"windows.stride=32 must be smaller than windows.max_length=32"),
    ("windows.pooling=median", r"windows.pooling='median': must be one of max, mean, attention"),
    ("protocol.train_size=0", r"protocol.train_size=0: must be null"),
    ("method.lr=abc", r"method.lr='abc': must be a positive number"),
    ("method.lr=-0.1", r"method.lr=-0.1: must be a positive number"),
    ("seed=abc", r"seed='abc': must be a whole number"),
    ("method.head_lr=1e999", r"method.head_lr=inf: must be a positive number"),
    ("method=classical data=custom method.C=-1", r"method.C=-1: must be a positive number"),
    ("method=classical data=custom method.classifier=forest", r"method.classifier='forest': must be one of logreg, svm"),
    ("method=classical data=custom method.min_choice_docs=-1", r"method.min_choice_docs=-1: must be null \(the "),
    ("experiment=legalbench_lora method.regime=everything", r"method.regime='everything': must be one of pooled"),
    ("experiment=legalbench_lora method.folds=1", r"method.folds=1: must be a whole number of folds, 2 or more"),
    ("method=classical data=custom protocol.test_fraction=0", r"protocol.test_fraction=0: must be null or a fraction"),
    ("method=classical data=custom +method.classifer=svm",
     r"method.classifer: not a setting of .*\(its settings: C, .*classifier.*\)\. Did you mean method.classifier\?"),
    ("method=classical data=custom +data.txt_column=facts", r"data.txt_column: not a setting of .*Did you mean data.text_column\?"),
    ("experiment=legalbench_lora +method.regimen=pooled", r"method.regimen: .*Did you mean method.regime\?"),
    ("method=setfit data=custom method.head_C=0", r"method.head_C=0: must be a positive number"),
    ("method=setfit data=custom method.embed_batch_size=0", r"method.embed_batch_size=0: must be a whole number of texts"),
    ("method=setfit data=custom method.iterations=-1", r"method.iterations=-1: must be a whole number of pairs"),
    ("experiment=proslex_lora_classifier method.pos_weight=-3", r"method.pos_weight=-3: must be auto \(negatives"),
    ("experiment=proslex_lora_classifier method.pos_weight=[1,0]", r"method.pos_weight=\[1, 0\]: must be auto"),
    ("experiment=proslex_lora_classifier lora.r=0", r"lora.r=0: must be a whole number, 1 or more"),
    ("experiment=legalbench_lora lora.quantize=fp4", r"lora.quantize='fp4': must be one of none, nf4"),
    ("experiment=legalbench_lora prompt.k=-2", r"prompt.k=-2: must be a whole number of demonstrations"),
    ("method.fuse_classical=0", r"method.fuse_classical=0: must be one of auto, true, false"),
    ("method.min_choice_docs=-1", r"method.min_choice_docs=-1: must be a whole number of held-out documents"),
    ("method.evidence_from=model", r"method.evidence_from=model names evidence with the model's view"),
    ("protocol.refit=sometimes", r"protocol.refit='sometimes': must be one of auto, true, false"),
])
def test_settings_of_the_wrong_kind_are_named(override, message):
    """The shared schema's checks, and those each method declares of its own settings and of the groups it reads
    (Method.settings, Method.group_settings, Method.config_problems): classical's C, classifier and min_choice_docs,
    SetFit's head and batches, the LLM classifier's pos_weight, the encoder's fusion and evidence, LoRA's regime,
    folds, adapters and prompts."""
    from hydra import compose, initialize_config_dir

    from legalft.configuration.resolvers import register_resolvers
    from legalft.apps.config_checks import check_config

    register_resolvers()
    *choices, override = override.split()  # groups chosen for the setting, else the quick start's
    base = choices or ["experiment=quickstart", "windows.stride=32"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[*base, override, "paths.root_dir=/x"])
    with pytest.raises(UserError, match=message):
        check_config(cfg)


def test_every_bad_setting_is_named_in_one_message_before_a_folder_or_torch(tmp_path):
    run_dir = tmp_path / "run"
    code = ("import runpy, sys; sys.argv = ['evaluate.py', *sys.argv[1:]]\n"
            "try:\n    runpy.run_path('evaluate.py', run_name='__main__')\n"
            "finally:\n    print('HEAVY', [m for m in ('torch', 'transformers', 'lightning') if m in sys.modules])")
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code, "prompt=base_prompt", "model=smollm2", "data=legalbench",
                             "data.tasks=[]", "prompt.strategy=bogus", "prompt.k=-1", "seed=-1",
                             f"hydra.run.dir={run_dir}"], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    assert result.returncode == 2 and result.stderr.startswith("error: 4 settings need fixing:"), result.stderr
    for named in ("data.tasks=[]", "prompt.strategy='bogus': must be one of base_prompt, zero_shot, few_shot",
                  "prompt.k=-1", "seed=-1"):
        assert named in result.stderr
    assert "HEAVY []" in result.stdout and not run_dir.exists() and elapsed < 3


@pytest.mark.parametrize("limit", ["0", "-90"])
def test_a_test_row_limit_must_be_positive(limit):
    from legalft.apps.config_checks import check_config

    with pytest.raises(UserError, match=rf"protocol.limit={limit}: must be null \(every test row\)"):
        check_config(OmegaConf.create({"protocol": {"limit": int(limit)}}))


@pytest.mark.slow
def test_bad_settings_and_an_encoder_for_lora_stop_before_a_run_folder_exists(tmp_path):
    from commands import run_script

    for overrides, message in (
        (["experiment=quickstart", "trainer.max_epochs=abc"], "trainer.max_epochs='abc'"),
        (["experiment=legalbench_lora", "model=minilm", "lora.target_modules=[query,value]"],
         "model=minilm is an encoder model, not a causal LM, and LoRA runs tune causal LMs"),
    ):
        result = run_script("train.py", *overrides, f"hydra.run.dir={tmp_path / 'run'}")
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "run").exists()


def test_wandb_with_a_key_goes_offline_at_once_when_its_server_cannot_be_reached(monkeypatch, caplog):
    import socket

    from legalft.configuration.resolvers import wandb_offline

    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)
    with socket.socket() as server:  # a W&B server that answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert wandb_offline() is False
        port = server.getsockname()[1]
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")  # closed now
    start = time.monotonic()
    assert wandb_offline() is True and time.monotonic() - start < 5
    assert "W&B's server cannot be reached from here: this run logs to W&B offline" in caplog.text
    monkeypatch.delenv("WANDB_API_KEY")
    assert wandb_offline() is True  # no key: offline, nothing to say


# --- the hub ----------------------------------------------------------------------------------------------
def test_an_unreachable_hub_fails_at_once(monkeypatch):
    from huggingface_hub import constants

    from legalft.foundation import hub
    from legalft.models import pretrained

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")  # a name that never resolves
    hub.hub_unreachable.cache_clear()
    try:
        start = time.monotonic()
        with pytest.raises(UserError, match="the hub is unreachable from here, and the model is not in the local cache"):
            pretrained.load_tokenizer("no-such-org/no-such-model")
        assert time.monotonic() - start < 10
    finally:
        hub.hub_unreachable.cache_clear()
