"""The documentation's commands work as written: every train.py, evaluate.py and study.py command in
README.md, docs/ and bench/README.md composes with Hydra (what `--cfg job` checks), every project path
they or their code blocks name exists, and every relative link leads to a file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "legalft"  # prose names modules relative to it (`data/chunking.py`)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
RUN_BY_PYTHON = re.compile(r"(?:^|\s)\S*python\S*\s+(train|evaluate|study|report)\.py((?:\s+\S.*)?)$")
INLINE_COMMAND = re.compile(r"^(train|evaluate|study|report)\.py((?:\s+\S.*)?)$")  # prose's `evaluate.py run=DIR`
PROJECT_PATH = re.compile(r"^(?:data|conf|slurm|bench|scripts|examples|src|docs|tests|sweeps|studies)/[\w./+-]*(?:\.\w+|/)$")


def code_lines(page: Path):
    """(line, in a code block) for each line of code: fenced blocks whole, and prose's inline code. A block that
    records another branch's ``git diff --stat`` (docs/extending.md's walk) names that branch's files: left out."""
    in_block = another_branch = False
    for line in re.sub(r"\\\n\s*", " ", page.read_text(encoding="utf-8")).splitlines():
        if line.lstrip().startswith("```"):
            in_block, another_branch = not in_block, False
            continue
        if in_block:
            another_branch = another_branch or line.startswith("$ git diff --stat main ")
            if not another_branch:
                yield line, True
        else:
            yield from ((span, False) for span in re.findall(r"`([^`]+)`", line))


def words(command: str) -> list[str]:
    """The command's words, placeholders (<run folder>, $TASKS, ...) made plain values."""
    command = re.sub(r"<[^<>]*>", "X", command).replace("$PWD", str(ROOT))
    command = re.sub(r"\$\{?\w+\}?", "x", command)
    command = re.split(r"\s(?:&&|\|\||;|\|)\s", command)[0]
    try:
        return [w for w in shlex.split(command, comments=True) if w not in ("...", "-m", "--cfg", "job")]
    except ValueError:
        return []


def documented_commands() -> list[tuple[str, str, list[str]]]:
    """(where, script, overrides) for each command with at least one override."""
    found = []
    for page in PAGES:
        for line, in_block in code_lines(page):
            match = RUN_BY_PYTHON.search(line) or (None if in_block else INLINE_COMMAND.match(line.strip()))
            if match:
                arguments = words(match.group(2))
                if arguments:
                    found.append((f"{page.relative_to(ROOT)}: {line.strip()[:90]}", match.group(1), arguments))
    return found


def first_of_each_sweep(overrides: list[str]) -> list[str]:
    """A multirun's first run: each swept key at its first value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    single = []
    for override, text in zip(OverridesParser.create().parse_overrides(overrides), overrides):
        if override.is_sweep_override():
            single.append(f"{override.get_key_element()}={next(override.sweep_string_iterator())}")
        else:
            single.append(text)
    return single


def composes(script: str, overrides: list[str]) -> None:
    """Hydra composes the command's config; a search's study name and storage resolve as its sweeper
    resolves them, before any run (no ${hydra:...} value is set then)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from legalft.configuration.resolvers import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name=script, overrides=first_of_each_sweep(overrides), return_hydra_config=True)
    if any(o.startswith("hparams_search=") for o in overrides):
        from hydra.core.hydra_config import HydraConfig

        HydraConfig.instance().cfg = None  # what a sweeper sees: no job's ${hydra:...} values yet
        for key in ("study_name", "storage"):
            OmegaConf.select(cfg, f"hydra.sweeper.{key}", throw_on_resolution_failure=True)


COMMANDS = documented_commands()


def test_the_documentation_has_commands_to_check():
    scripts = {script for _, script, _ in COMMANDS}
    assert len(COMMANDS) >= 40 and scripts == {"train", "evaluate", "study", "report"}


@pytest.mark.parametrize("where, script, arguments", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_documented_command_composes(where, script, arguments):
    if script != "study":
        composes(script, [a for a in arguments if not a.startswith("--")])
        return
    from legalft.study.plan import load_study

    verb, name, *rest = arguments
    assert verb in ("run", "status"), where
    study = load_study(name, [a for a in rest if "=" in a and not a.startswith("--")])
    for group in dict.fromkeys(run.group for run in study.runs):  # each group's first run
        run = next(r for r in study.runs if r.group == group)
        composes(run.script.removesuffix(".py"), run.overrides)


def test_every_project_path_the_documentation_names_exists():
    missing = []
    for page in PAGES:
        for line, in_block in code_lines(page):
            for word in words(line) if in_block else [line.strip()]:
                value = word.split("=", 1)[-1]
                if PROJECT_PATH.match(value) and not any((base / value).exists() for base in (ROOT, PACKAGE)):
                    missing.append(f"{page.relative_to(ROOT)}: {value}")
    assert missing == []


def test_every_relative_link_leads_to_a_file():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not re.match(r"[a-z]+://", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_checks_catch_a_wrong_key_and_a_missing_path(tmp_path):
    """A key no config has fails to compose, and the path check sees a file that is not there."""
    with pytest.raises(Exception, match="trainer.max_epoch"):
        composes("train", ["trainer.max_epoch=3"])
    with pytest.raises(Exception, match="HydraConfig was not set"):  # a search without an experiment naming it
        composes("train", ["hparams_search=proslex_optuna"])
    page = tmp_path / "page.md"
    page.write_text("```bash\n.venv/bin/python train.py data.train_path=data/samples/missing.csv\n```\n")
    (line, _), = code_lines(page)
    assert [w.split("=", 1)[-1] for w in words(line) if PROJECT_PATH.match(w.split("=", 1)[-1])] == [
        "data/samples/missing.csv"]


def documented_fields(section: str) -> dict[str, bool]:
    """Field -> always, from a markdown table whose first column names fields and second says "yes" or not."""
    fields = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            fields |= dict.fromkeys(re.findall(r"`([a-z_]+)`", cells[0]), cells[1] == "yes")
    return fields


def test_docs_results_md_describes_exactly_the_schema_results_are_written_in():
    from legalft.evaluation.run_results import RECORD_FIELDS, RUN_FIELDS

    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    records = text.split("## `predictions.jsonl`")[1].split("## `metrics.json`")[0]
    run = text.split("### `run`")[1].split("### `tasks`")[0]
    assert documented_fields(run) == RUN_FIELDS
    assert documented_fields(records) == RECORD_FIELDS


def test_results_outside_the_schema_are_refused_before_anything_is_written(tmp_path):
    from legalft.evaluation.run_results import RUN_FIELDS, write_run_results

    run = {key: "x" for key, always in RUN_FIELDS.items() if always}
    record = {"task": "t", "id": "1", "gold": "Yes", "prediction": "No"}
    (tmp_path / "ok").mkdir()
    assert write_run_results(tmp_path / "ok", run, {"t": {"n": 1}}, [record]).is_file()
    (tmp_path / "bad").mkdir()
    for bad_run, bad_record, problem in ((run | {"temperature": 0.0}, record, "run.temperature is not a results field"),
                                         ({k: v for k, v in run.items() if k != "seed"}, record, "run.seed is missing"),
                                         (run, record | {"logits": [0.1]}, "predictions hold 'logits'")):
        with pytest.raises(ValueError, match=re.escape(problem)):
            write_run_results(tmp_path / "bad", bad_run, {"t": {"n": 1}}, [bad_record])
        assert not any((tmp_path / "bad").iterdir())
