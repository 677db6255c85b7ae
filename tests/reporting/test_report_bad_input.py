"""report=compare under bad input: missing and damaged run folders named and left out, an out that is not a report
never replaced, the report written whole or not at all."""

from __future__ import annotations

import os
import re

import pytest

from legalft.foundation.errors import UserError
from legalft.reporting import compare as compare_module
from legalft.reporting.compare import compare

from report_runs import DAMAGES, damage_metrics, measured_rows, read_display, runs_root, write_run


def test_a_glob_that_matches_nothing(tmp_path):
    with pytest.raises(UserError, match="matches nothing"):
        compare(str(tmp_path / "nothing*"), str(tmp_path / "report"))


def test_a_run_folder_without_metrics_is_listed_and_left_out(runs_root, tmp_path, caplog):
    (runs_root / "unfinished").mkdir()
    (runs_root / "unfinished" / "config.yaml").write_text("seed: 0\n")
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    assert "left out 1 run folder(s) without metrics.json" in caplog.text and "unfinished" in caplog.text
    report = (out / "report.md").read_text()
    scored, missing = report.split("## Missing")
    assert "unfinished" not in scored and f"- {runs_root / 'unfinished'}" in missing  # named as missing, not scored
    with pytest.raises(UserError, match="none of them a scored run folder"):
        compare(str(runs_root / "unfinished"), str(tmp_path / "report2"))
    assert not (tmp_path / "report2").exists()



@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_run_folder_is_named_and_left_out(runs_root, tmp_path, damage):
    spoil, expected = DAMAGES[damage]
    spoil(runs_root / "ft0")
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    report = (out / "report.md").read_text()
    left_out = report.split("## Left out")[1].split("## Figures")[0]
    assert re.search(expected, left_out) and "ft0" in left_out
    assert "ft0" not in report.split("## Runs")[1].split("## Left out")[0]
    assert "hearsay" in measured_rows(out) and all("nan" not in str(row) for row in read_display(out))
    with pytest.raises(UserError, match=expected):  # nothing else to report: the reason is the message
        compare(str(runs_root / "ft0"), str(tmp_path / "report2"))
    assert not (tmp_path / "report2").exists()


def test_a_run_that_does_not_name_a_tasks_metric_leaves_the_rows_metric_as_the_others_name_it(runs_root, tmp_path):
    damage_metrics(runs_root / "ft0", lambda m: m["tasks"]["hearsay"].pop("metric"))
    expected = {}
    for order in ("ft0 first", "ft0 last"):
        folders = sorted(runs_root.iterdir(), key=lambda f: (f.name == "ft0") == (order == "ft0 last"))
        out = compare([str(f) for f in folders], str(tmp_path / order.replace(" ", "_")), resamples=20)
        row = measured_rows(out)["hearsay"]
        assert row["metric"] == "balanced_accuracy" and row["encoder minilm"].endswith(" (2)")
        expected[order] = row
    assert expected["ft0 first"] == expected["ft0 last"]


def test_a_copied_run_folder_is_not_a_second_seed(runs_root, tmp_path):
    import shutil

    shutil.copytree(runs_root / "ft0", runs_root / "ft0_copy")
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    report = (out / "report.md").read_text()
    assert re.search(r"ft0_copy: the same run as .*ft0 \(method, config digest and seed 0 alike", report)
    assert measured_rows(out)["hearsay"]["encoder minilm"].endswith(" (2)")  # seeds 0 and 1, the copy not again


def test_out_that_is_not_a_report_is_never_replaced(runs_root, tmp_path):
    notes = tmp_path / "thesis"
    notes.mkdir()
    (notes / "notes.md").write_text("draft")
    for overwrite in (False, True):
        with pytest.raises(UserError, match="is not a report written by report=compare"):
            compare(str(runs_root / "*"), str(notes), resamples=20, overwrite=overwrite)
    assert (notes / "notes.md").read_text() == "draft" and [p.name for p in notes.iterdir()] == ["notes.md"]
    assert not list(tmp_path.glob(".thesis*"))


@pytest.mark.parametrize("where", ["the glob's folder", "inside a run", "above the runs"])
def test_out_overlapping_the_runs_is_refused(runs_root, tmp_path, where):
    out = {"the glob's folder": runs_root, "inside a run": runs_root / "ft0" / "report",
           "above the runs": tmp_path}[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(UserError, match="overlaps"):
        compare(str(runs_root / "**"), str(out), resamples=20, overwrite=True)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_an_earlier_report_is_replaced_only_when_asked(runs_root, tmp_path):
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    with pytest.raises(UserError, match="holds an earlier report: set report.overwrite=true"):
        compare(str(runs_root / "*"), str(out), resamples=20)
    (out / "table.md").write_text("stale")
    compare(str(runs_root / "*"), str(out), resamples=20, overwrite=True)
    assert (out / "table.md").read_text() != "stale"
    (out / "my_notes.md").write_text("mine")
    with pytest.raises(UserError, match=r"files it did not write \(my_notes.md\)"):
        compare(str(runs_root / "*"), str(out), resamples=20, overwrite=True)
    assert (out / "my_notes.md").read_text() == "mine"
    assert not list(tmp_path.glob(".report*"))


def test_a_file_put_into_the_earlier_report_while_the_new_one_is_built_is_kept(runs_root, tmp_path, monkeypatch):
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    before = sorted(p.name for p in out.iterdir())
    write_all = compare_module.plots.write_all

    def user_saves_notes_meanwhile(*args, **kwargs):  # after the check of out, before the new report is placed
        (out / "my_notes.md").write_text("mine")
        return write_all(*args, **kwargs)

    monkeypatch.setattr(compare_module.plots, "write_all", user_saves_notes_meanwhile)
    with pytest.raises(UserError, match=r"files it did not write \(my_notes.md\)"):
        compare(str(runs_root / "*"), str(out), resamples=20, overwrite=True)
    assert (out / "my_notes.md").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == sorted([*before, "my_notes.md"])
    assert not list(tmp_path.glob(".report*"))


def test_a_second_report_into_an_out_being_written_refuses_at_once(runs_root, tmp_path, monkeypatch):
    out = tmp_path / "report"
    write_all = compare_module.plots.write_all
    refused = []

    def another_report_starts_meanwhile(*args, **kwargs):  # while this report is built
        with pytest.raises(UserError, match=rf"out={out} is being written by another report \(host .*PID {os.getpid()}"):
            compare(str(runs_root / "ft*"), str(out), resamples=20)
        refused.append(True)
        return write_all(*args, **kwargs)

    monkeypatch.setattr(compare_module.plots, "write_all", another_report_starts_meanwhile)
    compare(str(runs_root / "*"), str(out), resamples=20)
    assert refused and (out / "report.md").exists()
    assert not list(tmp_path.glob(".report*"))  # no lock file or staging folder left


def test_a_report_put_into_out_meanwhile_by_other_means_is_kept(runs_root, tmp_path, monkeypatch):
    """The lock holds reports of this project off; a report copied into out while this one is built (a
    user, or another machine without shared locks) is still never replaced."""
    import shutil

    out, other_out = tmp_path / "report", tmp_path / "other"
    compare(str(runs_root / "ft*"), str(other_out), resamples=20)
    other = {p.name: p.read_bytes() for p in other_out.iterdir()}
    write_all = compare_module.plots.write_all

    def copied_in_meanwhile(*args, **kwargs):
        shutil.copytree(other_out, out)
        return write_all(*args, **kwargs)

    monkeypatch.setattr(compare_module.plots, "write_all", copied_in_meanwhile)
    with pytest.raises(UserError, match="now holds a report another command wrote while this one was built"):
        compare(str(runs_root / "*"), str(out), resamples=20)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == other
    assert not list(tmp_path.glob(".report*"))


def test_out_holding_only_empty_folders_is_the_users(runs_root, tmp_path):
    out = tmp_path / "paper"
    (out / "figures_for_paper" / "2024").mkdir(parents=True)
    (out / "drafts").mkdir()
    for overwrite in (False, True):
        with pytest.raises(UserError, match="is not a report written by report=compare"):
            compare(str(runs_root / "*"), str(out), resamples=20, overwrite=overwrite)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "drafts", "figures_for_paper", "figures_for_paper/2024"]


def test_report_files_are_readable_as_the_umask_allows(runs_root, tmp_path):
    old = os.umask(0o022)
    try:
        out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / "report.md").stat().st_mode & 0o777 == 0o644


def test_one_method_on_two_test_sets_is_refused(runs_root, tmp_path):
    other_gold = {"hearsay": ["No", "Yes"] * 10}
    write_run(runs_root / "ft_other", "finetune", "minilm", 5, {"hearsay": other_gold["hearsay"]}, gold=other_gold)
    with pytest.raises(UserError, match="scored hearsay on different test sets"):
        compare(str(runs_root / "*"), str(tmp_path / "report"))


def test_the_report_is_whole_or_not_written(runs_root, tmp_path, monkeypatch):
    out = tmp_path / "report"
    compare(str(runs_root / "*"), str(out), resamples=20)
    before = sorted(p.name for p in out.iterdir())

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(compare_module.plots, "write_all", broken)
    with pytest.raises(RuntimeError):
        compare(str(runs_root / "*"), str(out), resamples=20, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == before  # the previous report, untouched
    assert not list(tmp_path.glob(".report*"))
