"""The run context a method is handed when a finished run is scored again: built from the run folder's
config.yaml, with the scoring command's data keys over the run's own."""

import pytest
import yaml


def saved_run(tmp_path, config: dict):
    from legalft.runs.folder import RunFolder

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return RunFolder(tmp_path)


def test_the_scoring_commands_data_keys_replace_the_runs_own_and_the_trained_data_stays(tmp_path):
    from legalft.runs.context import RunContext

    run = saved_run(tmp_path, {"seed": 3, "metric_mode": "official", "model": {"pretrained": "m"},
                               "data": {"test_path": "a.csv"}, "protocol": {"cv_folds": 5, "limit": 8, "seed": 3}})
    ctx = RunContext.for_saved_run(run, {"test_path": "b.csv", "root": None})
    assert ctx.data.test_path == "b.csv" and ctx.trained_data.test_path == "a.csv"
    assert "root" not in ctx.data  # a key the command left unset keeps the run's (here: none)
    assert (ctx.seed, ctx.metric_mode, ctx.cv_folds, ctx.whole_test_split) == (3, "official", 5, False)


def test_any_group_a_run_recorded_is_reached_by_name(tmp_path):
    """A method with a config group of its own reads it through ctx.group, with no field of its own."""
    from legalft.runs.context import RunContext

    run = saved_run(tmp_path, {"seed": 0, "model": {"pretrained": "m"}, "data": {"test_path": "a.csv"},
                               "retrieval": {"k": 4, "index": "bm25"}})
    ctx = RunContext.for_saved_run(run, {})
    assert ctx.group("retrieval").k == 4 and ctx.group("retrieval").index == "bm25" and ctx.group("absent") is None


def test_a_run_of_an_earlier_release_keeps_its_protocol_in_the_data_node_and_reads_it_where_it_is_now(tmp_path):
    from legalft.runs.context import RunContext

    run = saved_run(tmp_path, {"seed": 3, "model": {"pretrained": "m"},
                               "data": {"test_path": "a.csv", "cv_folds": 5, "limit": 8, "val_fraction": 0.2}})
    ctx = RunContext.for_saved_run(run, {})
    assert "cv_folds" not in ctx.data and "limit" not in ctx.data
    assert (ctx.cv_folds, ctx.whole_test_split, ctx.protocol.val_fraction, ctx.protocol.seed) == (5, False, 0.2, 3)
    assert ctx.saved and ctx.model_choice is None and ctx.config_text == (tmp_path / "config.yaml").read_text()


def test_a_saved_config_without_a_seed_or_data_is_named_with_what_to_do(tmp_path):
    from legalft.foundation.errors import UserError
    from legalft.runs.context import RunContext

    with pytest.raises(UserError, match=r"config.yaml: no seed, so not the config of a run train.py wrote"):
        RunContext.for_saved_run(saved_run(tmp_path, {"data": {}}), {})
    ctx = RunContext.for_saved_run(saved_run(tmp_path, {"seed": 0}), {})
    with pytest.raises(UserError, match=r"config.yaml: no data config, so the run's data cannot be read"):
        ctx.tasks()


def test_rescoring_leaves_the_runs_config_as_it_is(tmp_path):
    """``write_config`` saves a new run's config; a finished run's config.yaml is left as it is."""
    from legalft.runs.context import RunContext

    run = saved_run(tmp_path, {"seed": 0, "data": {}})
    before = run.config.read_text()
    RunContext.for_saved_run(run, {}).write_config()
    assert run.config.read_text() == before


def test_explanations_are_scored_as_the_run_scored_them_unless_the_command_sets_a_key(tmp_path):
    from omegaconf import OmegaConf

    from legalft.runs.context import RunContext

    command = OmegaConf.create({"bertscore_model": "roberta-large", "bertscore_layers": None})
    (tmp_path / "a").mkdir()
    run = saved_run(tmp_path / "a", {"seed": 0, "explanations": {"bertscore_model": "/models/minilm",
                                                                 "bertscore_layers": 6}})
    assert RunContext.for_saved_run(run, {}, explanations=command).explanations.bertscore_model == "/models/minilm"
    overridden = RunContext.for_saved_run(run, {}, explanations=command, explanation_overrides={"bertscore_layers": 4})
    assert (overridden.explanations.bertscore_model, overridden.explanations.bertscore_layers) == ("/models/minilm", 4)
    (tmp_path / "b").mkdir()
    older = saved_run(tmp_path / "b", {"seed": 0})  # a release before explanations were configured
    assert RunContext.for_saved_run(older, {}, explanations=command).explanations == command
