"""What `pip install legalft` puts on a machine."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def build_wheel(tmp_path):
    import shutil

    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("legalft-*.whl")
    return wheel


def test_the_wheel_holds_the_package_and_the_data_it_reads(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "legalft/data/legalbench_tasks.csv" in names  # the LegalBench catalog, read by data/legalbench.py
    assert "legalft/foundation/registry.py" in names and "hydra_plugins/legalft_launcher/slurm_launcher.py" in names
    assert {n for n in names if n.startswith("legalft/") and n.endswith(".py")} >= {
        f"legalft/{p.relative_to(ROOT / 'src' / 'legalft').as_posix()}" for p in (ROOT / "src" / "legalft").rglob("*.py")}
    package = ROOT / "src" / "legalft"
    for shipped in ("conf", "samples", "studies"):  # configs, the quick start's data, the shipped studies
        files = {f"legalft/{p.relative_to(package).as_posix()}" for p in (package / shipped).rglob("*") if p.is_file()}
        assert files and files <= names, sorted(files - names)[:5]
    assert "legalft/reporting/published_baselines.csv" in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    for command in ("legalft-train = legalft.apps.train:main", "legalft-evaluate = legalft.apps.evaluate:main",
                    "legalft-study = legalft.apps.study:main", "legalft-report = legalft.apps.report:main",
                    "[legalft.methods]", "encoder = legalft.methods.encoder:EncoderMethod", "[legalft.sources]"):
        assert command in scripts


def test_the_installed_wheel_trains_and_scores_the_quick_start_from_another_folder(tmp_path):
    """pip install of the wheel (not editable) into a fresh environment that reuses this one's installed
    libraries (torch and the rest, without this checkout's legalft), run from a folder outside the source."""
    import os
    import site
    import sysconfig

    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    python = env_dir / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    # this environment's libraries as plain paths: the .pth files there (this checkout's editable legalft) are not run
    (purelib / "reused_libraries.pth").write_text("\n".join([*site.getsitepackages(), sysconfig.get_paths()["purelib"]]))
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    where = subprocess.run([python, "-c", "import legalft; print(legalft.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(purelib)), where  # the installed copy, not this checkout's
    help_text = subprocess.run([env_dir / "bin" / "legalft-train", "--help"], cwd=work, env=env, capture_output=True,
                               text=True)
    assert "experiment: legalbench_lora" in help_text.stdout and "_encoder" not in help_text.stdout
    run_dir = work / "checkpoints" / "quickstart"
    train = subprocess.run([env_dir / "bin" / "legalft-train", "experiment=quickstart", "debug=limit",  # 3 batches
                            "trainer.enable_progress_bar=false", "hydra.run.dir=checkpoints/quickstart"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert train.returncode == 0, train.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["tasks"]["proslex_sample"]["n"] == 35 and metrics["run"]["method"] == "encoder"
    rescore = subprocess.run([env_dir / "bin" / "legalft-evaluate", "run=checkpoints/quickstart"], cwd=work,
                             env=env, capture_output=True, text=True, timeout=900)
    assert rescore.returncode == 0, rescore.stderr[-3000:]
    assert json.loads((run_dir / "metrics.json").read_text())["tasks"] == metrics["tasks"]
