"""report=compare over run folders written here: tables by category with seed spread, gaps and published numbers, LaTeX
that compiles, paired tests, prompt spread, figures, globs."""

from __future__ import annotations

import pytest

from legalft.foundation.errors import UserError
from legalft.reporting.compare import compare

from report_runs import (ABERCROMBIE_GOLD, HEARSAY_GOLD, MARKS, YES_NO, measured_rows, noisy, pdflatex, read_display,
                         runs_root, write_run)


def test_table_by_category_with_seed_spread_gaps_and_reported_numbers(runs_root, tmp_path):
    baselines = tmp_path / "baselines.csv"
    baselines.write_text("benchmark,task,metric,model,setting,value,source\n"
                         "legalbench,hearsay,balanced_accuracy,GPT-4,few-shot,0.9,made up for the test\n"
                         "legalbench,not_in_runs,balanced_accuracy,GPT-4,few-shot,0.5,ignored\n")
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), baselines=[str(baselines)], resamples=200)
    rows = measured_rows(out)
    encoder, incontext = "encoder minilm", "incontext smollm2 base_prompt k=4 score"
    # hearsay: seed 0 gets 18/20 right, seed 1 16/20 (both labels balanced): mean 0.85, sd 0.0707, and the
    # 95% t-interval 0.85 ± t(0.975, 1) * 0.0707 / sqrt(2) = 0.85 ± 12.706 * 0.05.
    assert rows["hearsay"][encoder] == "0.850 [0.215, 1.485] (2)*"  # best, and beats in-context (p < 0.05)
    # one run: its interval over the test rows, each class's Wilson bounds on its recall averaged (10/10 and
    # 10/20 right...: [0.722, 1.0] and [0.0, 0.278] where it answers one class only); no better than the
    # majority class (0.5), and so marked
    assert rows["hearsay"][incontext] == "0.500 [0.361, 0.639]°"
    assert (rows["hearsay"]["n"], rows["hearsay"]["majority"], rows["hearsay"]["chance"]) == ("20", "0.500", "0.500")
    assert float(rows["hearsay"]["detectable"]) == pytest.approx(2.8016 * (0.5 / 20) ** 0.5, abs=1e-3)
    assert rows["hearsay"]["reported: GPT-4 few-shot"] == "0.900"
    assert rows["abercrombie"][incontext] == "—"  # a gap, shown
    categories = [r["category"] for r in read_display(out)]
    assert categories.index("issue") < categories.index("interpretation")
    averages = [r for r in read_display(out) if r["task"].startswith("average")]
    assert [(r["category"], r[encoder], r[incontext]) for r in averages] == [
        ("issue", "0.850", "0.500"), ("interpretation", rows["abercrombie"][encoder].split(" ")[0], "—")]
    report = (out / "report.md").read_text()
    assert "## Gaps" in report and f"- {incontext}: abercrombie" in report
    assert f"- hearsay, {incontext}: 0.500 (majority 0.500, chance 0.500); one answer for every row" in report
    import csv

    with open(out / "table.csv") as f:
        floor_rows = {r["method"]: float(r["mean"]) for r in csv.DictReader(f)
                      if r["task"] == "hearsay" and r["kind"] == "baseline"}
    assert floor_rows == {"majority class": 0.5, "chance": 0.5}
    assert "(mean 10.5 s to results, peak memory 1,500 MB, cpu (2 cores))" in report  # what the seeds cost
    assert "not_in_runs" not in (out / "table.csv").read_text()
    for name in ("table.md", "table.tex", "table.csv", "significance_tasks.csv", "significance_categories.csv"):
        assert (out / name).stat().st_size > 0, name
    assert "\\begin{longtable}" in (out / "table.tex").read_text()


def test_the_latex_table_compiles_with_booktabs_escaped_bold_and_marks(runs_root, tmp_path, pdflatex):
    """Task and prompt names with underscores, † columns, — gaps, # and & in a method name: pdflatex
    builds the table with no error, and the best cell of a row is bold."""
    import subprocess

    from legalft.reporting.latex import standalone

    write_run(runs_root / "subset", "encoder", "mini_lm&co#1", 2, {"hearsay": HEARSAY_GOLD}, comparable=False)
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=100)
    table = (out / "table.tex").read_text()
    assert "\\toprule" in table and "\\bottomrule" in table and "base\\_prompt" in table
    assert "\\textbf{1.000}" in table  # the marked run's hearsay cell, the best of its row
    assert "p < 0.05 after Holm's correction" in table
    build = tmp_path / "build"
    build.mkdir()
    (build / "doc.tex").write_text(standalone(table))
    result = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=build,
                            capture_output=True, text=True, timeout=120)
    log = (build / "doc.log").read_text(errors="replace")
    assert result.returncode == 0 and (build / "doc.pdf").stat().st_size > 1000, result.stdout[-3000:]
    assert "! " not in log and "Missing character" not in log, log[-3000:]


@pytest.mark.parametrize("two_column", [False, True], ids=["article", "twocolumn"])
def test_the_compact_table_fits_a_page_of_a_one_or_two_column_article_and_both_tables_compile(tmp_path, pdflatex,
                                                                                             two_column):
    """Eight methods with long names: the long table is wider than the page; the compact one (short labels,
    means only, the metric named once) is not, and both build in an article and a two-column article."""
    import subprocess

    from legalft.reporting.latex import in_article

    root = tmp_path / "runs"
    for number in range(8):
        wrong = {number, (number + 3) % 20}
        write_run(root / f"m{number}", "incontext", f"a-rather-long-model-name-{number}", 0,
                  {"hearsay": noisy(HEARSAY_GOLD, wrong, YES_NO), "abercrombie": noisy(ABERCROMBIE_GOLD, wrong, MARKS)},
                  extra={"prompt": "base_prompt", "k": number, "answer": "generate"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=50,
                  short_names={"incontext a-rather-long-model-name-0 base_prompt k=0 generate": "Zero"})
    compact = (out / "table_compact.tex").read_text()
    assert "\\begin{table*}" in compact and "Every task in balanced accuracy." in compact
    assert "Zero & B & C" in compact and "B: incontext a-rather-long-model-name-1 base\\_prompt k=1 generate" in compact
    assert "\\textit{issue}" in compact and "\\textit{interpretation}" in compact  # tasks under their category
    overfull = {}
    for name in ("table.tex", "table_compact.tex"):
        build = tmp_path / f"build_{name}"
        build.mkdir()
        (build / "doc.tex").write_text(in_article((out / name).read_text(), two_column))
        result = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=build,
                                capture_output=True, text=True, timeout=120)
        log = (build / "doc.log").read_text(errors="replace")
        assert result.returncode == 0 and "! " not in log, log[-3000:]
        overfull[name] = "Overfull \\hbox" in log
    assert overfull == {"table.tex": True, "table_compact.tex": False}


def test_paired_tests_compare_finetuned_against_incontext(runs_root, tmp_path):
    import csv

    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=300)
    with open(out / "significance_tasks.csv") as f:
        tests = list(csv.DictReader(f))
    assert [(t["task"], t["method_a"], t["method_b"]) for t in tests] == [
        ("hearsay", "encoder minilm", "incontext smollm2 base_prompt k=4 score")]
    test = tests[0]
    # the seed-0 run (18/20) against in-context (10/20): difference 0.4, far from chance.
    assert float(test["difference"]) == pytest.approx(0.4)
    assert float(test["p_permutation"]) < 0.05 and float(test["ci_low"]) > 0  # 9 discordant wins to 1


def test_runs_scored_on_different_rows_are_paired_on_the_rows_both_scored(tmp_path):
    """An in-context run on protocol.limit rows is tested against a full-split run on the rows both scored."""
    import csv

    root = tmp_path / "runs"
    write_run(root / "ft", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1, 2}, YES_NO)})
    for prompt, rows in (("zero_shot", 12), ("knn", 5)):
        write_run(root / prompt, "incontext", "smollm2", 0, {"hearsay": noisy(HEARSAY_GOLD[:rows], {0, 3, 4}, YES_NO)},
                  gold={"hearsay": HEARSAY_GOLD[:rows]}, comparable=False,
                  extra={"prompt": prompt, "k": 0, "answer": "generate", "limit": rows})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=200)
    with open(out / "significance_tasks.csv") as f:
        tests = {t["method_b"].split()[2]: t for t in csv.DictReader(f)}
    assert set(tests) == {"zero_shot"}  # 5 shared rows decide nothing: not tested
    assert (tests["zero_shot"]["n"], tests["zero_shot"]["n_a"], tests["zero_shot"]["n_b"]) == ("12", "20", "12")
    # on rows 0-11: the encoder errs on 1, 2; in-context on 0, 3, 4
    assert float(tests["zero_shot"]["difference"]) == pytest.approx(10 / 12 - 9 / 12)
    report = (out / "report.md").read_text()
    assert "tested on the 12 examples both scored (of 20 and 12)" in report
    assert "share 5 scored examples (20 and 5 scored), too few to test (under 10)" in report
    alone = compare([str(root / "ft"), str(root / "knn")], str(tmp_path / "untested"), resamples=50)
    assert (alone / "significance_tasks.csv").read_text().startswith("category,task,metric,method_a,method_b,n,n_a")


def test_the_spread_over_prompts_is_set_beside_the_fine_tuned_methods(tmp_path):
    import csv

    root = tmp_path / "runs"
    write_run(root / "ft", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1}, YES_NO)})  # 0.95
    for prompt, wrong in (("base_prompt", {0, 1, 2, 3}), ("zero_shot", set(range(8))), ("knn", {5})):  # .8, .6, .95
        write_run(root / prompt, "incontext", "smollm2", 0, {"hearsay": noisy(HEARSAY_GOLD, wrong, YES_NO)},
                  extra={"prompt": prompt, "k": 0, "answer": "generate"})
    write_run(root / "scored", "incontext", "smollm2", 0, {"hearsay": HEARSAY_GOLD},  # another answer mode: alone
              extra={"prompt": "zero_shot", "k": 0, "answer": "score"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=20)
    with open(out / "prompt_sensitivity.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["task"], row["model, answer"], row["prompts"]) == ("hearsay", "smollm2, generate", "3")
    assert (float(row["lowest"]), float(row["highest"]), float(row["spread"])) == pytest.approx((0.6, 0.95, 0.35))
    assert row["best prompt"] == "incontext smollm2 knn k=0 generate"
    assert float(row["encoder minilm (over best prompt)"]) == pytest.approx(0.0)
    assert "## Prompt sensitivity" in (out / "report.md").read_text()


def test_a_user_template_is_a_prompt_of_its_own(tmp_path):
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.foundation.errors import UserError
    from legalft.llm.prompts import PromptBuilder

    task = Task(TaskSpec("hearsay", ("No", "Yes"), False, description="Is it hearsay?"), train=[],
                test=[Example(id="0", text="He said so.", labels=("Yes",), fields={"text": "He said so."})])
    builder = PromptBuilder("template", template="{{description}}\n{{text}}\nAnswer ({{labels}}):")
    assert builder.build(task, task.test) == ["Is it hearsay?\nHe said so.\nAnswer (No, Yes):"]
    with pytest.raises(UserError, match="prompt.template: placeholder"):
        PromptBuilder("template", template="{{facts}}").build(task, task.test)
    with pytest.raises(UserError, match="prompt=template needs prompt.template"):
        PromptBuilder("template")
    from legalft.methods.incontext import IncontextMethod

    info = {"model": "smollm2", "prompt": "template", "template_digest": "1a2b3c4d", "k": 0, "answer": "score"}
    assert " ".join(IncontextMethod.report_words(info)) == "incontext smollm2 template:1a2b3c4d k=0 score"


def test_not_comparable_runs_get_their_own_marked_column(runs_root, tmp_path):
    write_run(runs_root / "subset", "finetune", "minilm", 2, {"hearsay": HEARSAY_GOLD}, comparable=False)
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=50)
    rows = measured_rows(out)
    assert rows["hearsay"]["encoder minilm †"] == "1.000 [0.722, 1.000]*"  # best of the row, and beats in-context
    assert rows["hearsay"]["encoder minilm"] == "0.850 [0.215, 1.485] (2)"  # not averaged with the marked run


def test_figures_are_written_as_png_pdf_and_svg(runs_root, tmp_path):
    from PIL import Image

    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=50)
    pngs = sorted(p.stem for p in out.glob("*.png"))
    assert "category_bars" in pngs and any(p.startswith("paired_encoder_minilm__vs__incontext") for p in pngs)
    for stem in pngs:
        with Image.open(out / f"{stem}.png") as image:
            assert image.info["dpi"][0] == pytest.approx(300, abs=1)
        assert (out / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
        assert b"<svg" in (out / f"{stem}.svg").read_bytes()[:2000]
    svg = (out / "category_bars.svg").read_text()
    assert "chance" in svg and "0.85" in svg  # the chance line's legend and a value label (hearsay, 2 seeds)
    assert "95% intervals" in svg and "interval over seeds" in svg  # the encoder has two seeds on every task


def test_category_bars_chance_and_a_zero_bar(tmp_path):
    """A method scoring 0 on every task still has a bar (its edge and its label), and the chance line of
    balanced accuracy on a binary and a five-way task sits at their mean of 1/k."""
    from legalft.reporting import plots
    from legalft.reporting.tables import Cell

    cells = {("hearsay", "zero"): Cell(((0, 0.0),)), ("abercrombie", "zero"): Cell(((0, 0.0),)),
             ("hearsay", "good"): Cell(((0, 0.9),)), ("abercrombie", "good"): Cell(((0, 0.7),))}
    rows = {"hearsay": ("issue", "balanced_accuracy"), "abercrombie": ("issue", "balanced_accuracy")}
    plots.category_bars(tmp_path, cells, rows, ["good", "zero"], {"hearsay": 0.5, "abercrombie": 0.2})
    svg = (tmp_path / "category_bars.svg").read_text()
    assert "0.00" in svg and "0.80" in svg and "chance" in svg
    assert "interval over tasks" in svg  # one seed: the interval is over the category's tasks


def test_bars_keep_intervals_within_0_and_1_and_say_how_many_tasks_each_averages(tmp_path, monkeypatch):
    from legalft.reporting import plots
    from legalft.reporting.tables import Cell

    drawn = {}
    monkeypatch.setattr(plots, "save", lambda fig, out, stem: drawn.setdefault(stem, fig))
    # two tasks near 1 with a wide spread over them: a t-interval over tasks that passes 1
    cells = {("hearsay", "a"): Cell(((0, 0.99),)), ("abercrombie", "a"): Cell(((0, 0.71),)),
             ("hearsay", "b"): Cell(((0, 0.05),)), ("abercrombie", "b"): Cell(((0, 0.3),))}
    rows = {"hearsay": ("issue", "balanced_accuracy"), "abercrombie": ("issue", "balanced_accuracy")}
    plots.category_bars(tmp_path, cells, rows, ["a", "b"], {})
    ax = drawn["category_bars"].axes[0]
    ends = [y for collection in ax.collections for segment in collection.get_segments() for _, y in segment]
    assert ends and min(ends) >= 0.0 and max(ends) <= 1.0  # the intervals of a and b pass 1 and 0 unclipped
    labels = [text.get_text() for text in ax.texts]
    assert "0.85 (n=2)" in labels and "0.17 (n=2)" in labels
    # the label sits above its bar's interval, never across it
    a_label = next(t for t in ax.texts if t.get_text() == "0.85 (n=2)")
    assert a_label.get_position()[1] >= 1.0


def test_each_method_has_one_colour_in_every_figure():
    from legalft.reporting.plots import OKABE_ITO, colours

    mapping = colours(["encoder minilm", "incontext smollm2 base_prompt k=0 score", "lora smollm2 pooled"])
    assert list(mapping.values()) == OKABE_ITO[:3]
    assert colours(["x"] * 0) == {} and len(set(colours([str(i) for i in range(8)]).values())) == 8


def test_data_efficiency_curve_with_the_incontext_line(tmp_path):
    root = tmp_path / "runs"
    for n, wrong in ((4, set(range(8))), (8, set(range(5))), (16, {1})):
        for seed in (0, 1):
            write_run(root / f"n{n}s{seed}", "finetune", "minilm", seed,
                      {"hearsay": noisy(HEARSAY_GOLD, wrong | {seed + 10}, YES_NO)}, extra={"train_size": n})
    write_run(root / "icl", "incontext", "smollm2", 0, {"hearsay": noisy(HEARSAY_GOLD, {0, 1, 2, 3}, YES_NO)},
              extra={"prompt": "few_shot", "k": 4, "answer": "score"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=20)
    assert (out / "data_efficiency_hearsay.png").stat().st_size > 2000
    import csv

    with open(out / "data_efficiency.csv") as f:
        curve = list(csv.DictReader(f))
    assert [int(row["n"]) for row in curve] == [4, 8, 16]
    assert [float(row["mean"]) for row in curve] == sorted(float(row["mean"]) for row in curve)


def test_runs_can_be_a_list_of_globs(runs_root, tmp_path):
    out = compare([str(runs_root / "ft*"), str(runs_root / "icl")], str(tmp_path / "report"), resamples=20)
    assert set(measured_rows(out)["hearsay"]) >= {"encoder minilm", "incontext smollm2 base_prompt k=4 score"}
    out = compare([str(runs_root / "ft0")], str(tmp_path / "report_one"), resamples=20)
    assert "incontext smollm2 base_prompt k=4 score" not in measured_rows(out)["hearsay"]
