"""A method and a data source from outside the project (examples/majority_plugin, docs/extending.md)
register themselves and go through train, rescore and report with nothing in the project listing them."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import ROOT
from commands import run_script, run_scripts

pytestmark = pytest.mark.slow

PLUGIN = ROOT / "examples" / "majority_plugin"


def installed_plugin(site):
    """What ``pip install examples/majority_plugin`` leaves: the module and the entry points its pyproject.toml
    declares."""
    import tomllib

    site.mkdir()
    shutil.copy(PLUGIN / "legalft_majority.py", site)
    info = site / "legalft_majority-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: legalft-majority\nVersion: 0.1.0\n")
    groups = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) for group, points in groups.items()))
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def test_a_plugin_method_and_source_train_rescore_and_report(tmp_path):
    env = installed_plugin(tmp_path / "site")
    runs, searchpath = tmp_path / "runs", f"hydra.searchpath=[file://{PLUGIN / 'conf'}]"
    # the plugin's methods (one trained with Lightning on the project's TrainedMethod), and a project method
    methods = ("majority", "hashed_words", "classical")
    trained = run_scripts(*[("train.py", searchpath, f"method={method}", "data=toy", f"hydra.run.dir={runs / method}")
                            for method in methods], env=env)
    for result in trained:
        assert result.returncode == 0, result.stderr[-3000:]
    scored = {method: json.loads((runs / method / "metrics.json").read_text()) for method in methods}
    for method, metrics in scored.items():
        assert metrics["run"]["method"] == method and metrics["tasks"]["toy"]["n"] == 4
    for method, result in zip(methods, run_scripts(*[("evaluate.py", f"run={runs / m}") for m in methods], env=env)):
        assert result.returncode == 0, result.stderr[-3000:]
        assert json.loads((runs / method / "metrics.json").read_text())["tasks"] == scored[method]["tasks"]
    majority = json.loads((runs / "majority" / "metrics.json").read_text())["tasks"]["toy"]
    assert majority["balanced_accuracy"] == 0.5 and majority["accuracy"] == 0.5  # "Yes" for r0-r3: two of four

    report = run_script("report.py", f"runs={runs}/*", f"out={tmp_path / 'report'}",
                        "report.resamples=20", env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    header = (tmp_path / "report" / "table.md").read_text().splitlines()[0]
    assert "majority none" in header and "classical tfidf_logreg" in header and "hashed_words hashed_64" in header
    assert (runs / "hashed_words" / "hashed_words.safetensors").is_file()  # what its rescoring read back

    # without the plugin installed, its run folder names a class nobody registered: nothing is built
    result = run_script("evaluate.py", f"run={runs / 'majority'}")
    assert result.returncode == 2 and "legalft_majority.MajorityMethod' is not one of the classes" in result.stderr
