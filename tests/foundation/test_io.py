"""What the project's file writes promise: a folder appears whole or not at all, and nothing is made on the way to
it that the command did not ask for."""

from __future__ import annotations

import pytest

from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_folder
from legalft.models.adapter_files import new_export_folder


def test_a_dot_dot_in_a_new_folder_is_read_as_written_and_makes_no_folder_on_the_way(tmp_path):
    out = new_export_folder(str(tmp_path / "not_yet" / ".." / "export"))
    assert out == tmp_path / "export"
    with atomic_folder(tmp_path / "not_yet" / ".." / "export", make_parents=True) as partial:
        (partial / "model.txt").write_text("weights")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"] and (tmp_path / "export" / "model.txt").is_file()
    with pytest.raises(UserError, match=f"{tmp_path / 'export'} exists: choose a new folder"):
        new_export_folder(str(tmp_path / "elsewhere" / ".." / "export"))


def test_a_failed_fill_leaves_neither_the_folder_nor_the_parents_it_made(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_folder(tmp_path / "a" / "b" / "export", make_parents=True) as partial:
            (partial / "half.txt").write_text("half")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
