"""What `pip install legalft` puts on a machine."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_wheel_holds_the_package_and_the_data_it_reads(tmp_path):
    import shutil

    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("legalft-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "legalft/data/legalbench_tasks.csv" in names  # the LegalBench catalog, read by data/legalbench.py
    assert "legalft/registry.py" in names and "hydra_plugins/legalft_launcher/slurm_launcher.py" in names
    assert {n for n in names if n.startswith("legalft/") and n.endswith(".py")} >= {
        f"legalft/{p.relative_to(ROOT / 'src' / 'legalft').as_posix()}" for p in (ROOT / "src" / "legalft").rglob("*.py")}
