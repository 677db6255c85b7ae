"""report=compare: significance against hand-computed cases, tables over run folders written here,
marks, gaps, bad input, plots, and the report written whole or not at all."""

from __future__ import annotations

import itertools
import json
import re
import math
import os
from pathlib import Path

import numpy as np
import pytest

from legalft.foundation.errors import UserError
from legalft.reporting import compare as compare_module
from legalft.reporting.compare import compare
from legalft.evaluation.counts import hit_counts
from legalft.reporting.significance import (
    adjust_p_values,
    paired_bootstrap_interval,
    paired_permutation_test,
    paired_t_test_over_tasks,
)

ROOT = Path(__file__).resolve().parents[1]


def accuracy_counts(gold, predicted):
    return hit_counts(np.array([g == p for g, p in zip(gold, predicted)], dtype=np.int64))


def test_permutation_p_value_matches_exact_enumeration():
    gold = list("AAAAAABB")
    first = list("AAAAAABA")  # 7 of 8 right
    second = list("ABABBABA")  # 4 of 8 right; the two differ on 3 examples, all won by the first
    right_first = np.array([g == p for g, p in zip(gold, first)])
    right_second = np.array([g == p for g, p in zip(gold, second)])
    observed = right_first.mean() - right_second.mean()
    extreme = 0
    for swaps in itertools.product([False, True], repeat=len(gold)):  # all 256 relabellings
        swaps = np.array(swaps)
        a, b = np.where(swaps, right_second, right_first), np.where(swaps, right_first, right_second)
        extreme += abs(a.mean() - b.mean()) >= abs(observed) - 1e-12
    exact = extreme / 2 ** len(gold)
    difference, p = paired_permutation_test(accuracy_counts(gold, first), accuracy_counts(gold, second), resamples=4000)
    assert difference == pytest.approx(3 / 8)
    assert exact == pytest.approx(2 / 8)  # by hand: as extreme only when none or all of the 3 are swapped
    assert p == pytest.approx(exact)  # 2^8 <= 4000 resamples: SciPy enumerates every swap


def test_identical_methods_are_not_significant():
    gold = list("ABABABAB")
    counts = accuracy_counts(gold, gold)
    assert paired_permutation_test(counts, counts, resamples=200) == (0.0, 1.0)
    assert paired_bootstrap_interval(counts, counts, resamples=200) == (0.0, 0.0, "none (identical)")


def test_bootstrap_interval_equals_scipy_on_the_per_example_differences():
    """For accuracy the difference of the two means is the mean of the per-example differences, so the
    interval must be SciPy's BCa interval of that mean, drawn with the same generator."""
    from scipy.stats import bootstrap

    gold = [0, 1] * 30
    first = gold[:48] + [1 - g for g in gold[48:]]  # 48 of 60 right
    second = [1 - g for g in gold[:25]] + gold[25:]  # 35 of 60 right
    low, high, method = paired_bootstrap_interval(accuracy_counts(gold, first), accuracy_counts(gold, second),
                                                  resamples=2000, seed=3)
    per_example = np.array([(f == g) - (s == g) for g, f, s in zip(gold, first, second)], dtype=float)
    reference = bootstrap((per_example,), np.mean, n_resamples=2000, method="BCa", batch=2_000_000 // 60,
                          rng=np.random.default_rng(3)).confidence_interval
    assert method == "BCa"
    assert (low, high) == pytest.approx((reference.low, reference.high))
    assert low < 13 / 60 < high


def test_item_counts_score_every_metric_as_the_full_metric_does():
    """A task's per-example counts give its recorded score on the full test set and, on resamples, the
    score scikit-learn or LegalBench's scorer gives the resampled examples (over the task's label
    space), without a warning."""
    import warnings

    from sklearn.preprocessing import MultiLabelBinarizer

    from legalft.evaluation.counts import label_counts
    from legalft.evaluation.metrics import item_counts, legalbench_scores, multilabel_scores, single_label_scores

    rng = np.random.default_rng(0)
    cases = []  # (name, counts, reference scorer, gold, predicted)

    def legalbench(task, metric, gold, predicted):
        cases.append((task, item_counts(task, {"metric": metric}, gold, predicted), lambda g, p, task=task, metric=metric:
                      legalbench_scores(task, metric, g, p)[metric], gold, predicted))

    gold = list(rng.choice(["Yes", "No", "Maybe"], 40))
    legalbench("hearsay", "balanced_accuracy", gold,
               [g if rng.random() < 0.7 else rng.choice(["yes", "No.", "perhaps"]) for g in gold])
    names = ["Acme Corp", "Beta LLC", "Gamma Inc"]
    gold = [", ".join(rng.choice(names, rng.integers(1, 3), replace=False)) for _ in range(30)]
    legalbench("ssla_company_defendants", "f1", gold, [g if rng.random() < 0.5 else rng.choice(names) for g in gold])
    gold = list(rng.choice(["express agreement", "de facto merger,mere continuation"], 30))
    legalbench("successor_liability", "f1", gold, [g if rng.random() < 0.6 else "none" for g in gold])
    gold = [f"${rng.integers(100, 10_000)}" for _ in range(30)]
    legalbench("sara_numeric", "within_10pct", gold, [g.strip("$") if rng.random() < 0.5 else "12" for g in gold])
    statutes = ["IPC 201", "IPC 302", "IPC 420"]
    gold = [list(rng.choice(statutes, rng.integers(1, 3), replace=False)) for _ in range(40)]
    predicted = [g if rng.random() < 0.5 else list(rng.choice(statutes, 1)) for g in gold]
    binarizer = MultiLabelBinarizer(classes=statutes)
    for metric in ("macro_f1", "micro_f1", "accuracy"):
        cases.append((f"proslex {metric}", label_counts(binarizer.fit_transform(gold), binarizer.transform(predicted),
                                                        metric),
                      lambda g, p, metric=metric: multilabel_scores(g, p, statutes)[metric], gold, predicted))
    assert item_counts("proslex", {"per_label": dict.fromkeys(statutes)}, gold, predicted).value() == pytest.approx(
        multilabel_scores(gold, predicted, statutes)["macro_f1"])
    gold = list(rng.choice(["x", "y", "z"], 40))
    predicted = [g if rng.random() < 0.6 else "y" for g in gold]
    cases.append(("custom", item_counts("custom", {}, gold, predicted),
                  lambda g, p: single_label_scores(g, p, ["x", "y", "z"])["macro_f1"], gold, predicted))

    for name, counts, reference, g, p in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reference may warn on a resample; the counts must not (below)
            assert counts.value() == pytest.approx(reference(g, p), abs=1e-12), name
            for _ in range(20):  # small resamples, where classes go missing
                pick = rng.integers(0, len(g), 6)
                expected = reference([g[i] for i in pick], [p[i] for i in pick])
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    got = float(counts.score(counts.counts[pick].sum(0)))
                assert got == pytest.approx(expected, abs=1e-12), (name, pick)


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, float("nan"), 0.5]
    # Holm: sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 -> 0.04, 0.09, 0.08 (raised to 0.09: monotone), 0.5
    assert adjust_p_values(p, "holm")[[0, 2, 1, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.5])
    # BH: p * m / rank -> 0.04, 0.06, 0.0533, 0.5, made monotone from the top -> 0.04, 0.0533, 0.0533, 0.5
    assert adjust_p_values(p, "bh")[[0, 2, 1, 4]] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert math.isnan(adjust_p_values(p, "holm")[3])
    assert adjust_p_values(p, "none")[1] == 0.04


def test_paired_t_test_over_tasks_by_hand():
    difference, p = paired_t_test_over_tasks([0.6, 0.8, 0.9], [0.5, 0.6, 0.6])  # differences 0.1, 0.2, 0.3
    assert difference == pytest.approx(0.2)
    assert p == pytest.approx(0.0742, abs=5e-4)  # t = 0.2 / (0.1 / sqrt 3) = 3.464, 2 degrees of freedom
    assert math.isnan(paired_t_test_over_tasks([0.5], [0.4])[1])


# --- Run folders written by hand, in the DESIGN.md format ---------------------------------------
HEARSAY_GOLD = ["Yes", "No"] * 10
ABERCROMBIE_GOLD = ["generic", "descriptive", "suggestive", "arbitrary", "fanciful"] * 4


def write_run(folder: Path, method: str, model: str, seed: int, predictions: dict[str, list], *,
              categories=None, comparable=True, extra=None, gold=None) -> Path:
    from legalft.evaluation.metrics import legalbench_scores, multilabel_scores

    folder.mkdir(parents=True)
    gold = gold or {"hearsay": HEARSAY_GOLD, "abercrombie": ABERCROMBIE_GOLD, "proslex": None}
    tasks, records = {}, []
    for task, predicted in predictions.items():
        if task == "proslex":
            task_gold = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
            tasks[task] = multilabel_scores(task_gold, predicted, ["IPC 201", "IPC 302", "IPC 420"])
        else:
            task_gold = gold[task]
            tasks[task] = legalbench_scores(task, "balanced_accuracy", task_gold, predicted)
            tasks[task]["category"] = (categories or {"hearsay": "issue", "abercrombie": "interpretation"})[task]
        records += [{"task": task, "id": str(i), "gold": g, "prediction": p}
                    for i, (g, p) in enumerate(zip(task_gold, predicted))]
    run = {"method": method, "model": model, "seed": seed, "metric_mode": "paper", "comparable": comparable,
           **(extra or {})}
    (folder / "metrics.json").write_text(json.dumps({"run": run, "tasks": tasks}))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def noisy(gold: list, wrong: set[int], labels: list) -> list:
    return [labels[(labels.index(g) + 1) % len(labels)] if i in wrong else g for i, g in enumerate(gold)]


YES_NO = ["Yes", "No"]
MARKS = ["generic", "descriptive", "suggestive", "arbitrary", "fanciful"]


@pytest.fixture
def runs_root(tmp_path) -> Path:
    root = tmp_path / "runs"
    for seed, wrong in ((0, {1, 2}), (1, {3, 4, 5, 6})):
        write_run(root / f"ft{seed}", "encoder", "minilm", seed, {
            "hearsay": noisy(HEARSAY_GOLD, wrong, YES_NO), "abercrombie": noisy(ABERCROMBIE_GOLD, wrong, MARKS)},
            extra={"cost": {"wall_seconds": 10.0 + seed, "device": "cpu (2 cores)", "peak_memory_mb": 1000.0 + 500 * seed}})
    write_run(root / "icl", "incontext", "smollm2", 0, {
        "hearsay": noisy(HEARSAY_GOLD, set(range(0, 20, 2)), YES_NO)}, extra={"prompt": "base_prompt", "k": 4,
                                                                               "answer": "score"})
    return root


def measured_rows(out: Path) -> dict[str, dict]:
    """Each task's row in the task's own metric (it comes before rows of published numbers in other metrics)."""
    rows: dict[str, dict] = {}
    for row in read_display(out):
        rows.setdefault(row["task"], row)
    return rows


def read_display(out: Path) -> list[dict]:
    import csv

    with open(out / "table_display.csv") as f:
        return list(csv.DictReader(f))


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


@pytest.fixture(scope="session")
def pdflatex() -> str:
    """pdflatex with booktabs, installed from Debian (texlive-latex-base, -recommended) when missing,
    as the SLURM tests install SLURM."""
    import shutil
    import subprocess

    def ready():
        return shutil.which("pdflatex") and subprocess.run(["kpsewhich", "booktabs.sty"], capture_output=True,
                                                             text=True).stdout.strip()

    if not ready():
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip("pdflatex with booktabs is missing: apt-get install texlive-latex-base texlive-latex-recommended")
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "texlive-latex-base",
                        "texlive-latex-recommended"], check=True, capture_output=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    assert ready(), "pdflatex or booktabs.sty still missing after installing texlive"
    return shutil.which("pdflatex")


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


def damage_metrics(folder: Path, change) -> None:
    metrics = json.loads((folder / "metrics.json").read_text())
    change(metrics)
    (folder / "metrics.json").write_text(json.dumps(metrics))


DAMAGES = {
    "truncated_metrics": (lambda f: (f / "metrics.json").write_text((f / "metrics.json").read_text()[:100]),
                          "metrics.json is not valid JSON"),
    "list_metrics": (lambda f: (f / "metrics.json").write_text("[]"), "not a results file"),
    "truncated_predictions": (lambda f: (f / "predictions.jsonl").write_text((f / "predictions.jsonl").read_text()[:-30]),
                              r"predictions.jsonl: line 40 is not a prediction record \(not JSON"),
    "prediction_without_id": (lambda f: (f / "predictions.jsonl").write_text(
        "\n".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "id"})
                  for line in (f / "predictions.jsonl").read_text().splitlines())), r"line 1 .*\(no id"),
    "huge_score": (lambda f: damage_metrics(f, lambda m: m["tasks"]["hearsay"].update(balanced_accuracy=1e308)),
                   r"tasks.hearsay.balanced_accuracy=1e\+308 is not a score in \[0, 1\]"),
    "nan_score": (lambda f: damage_metrics(f, lambda m: m["tasks"]["hearsay"].update(balanced_accuracy=float("nan"))),
                  r"tasks.hearsay.balanced_accuracy=nan is not a score"),
    "no_method": (lambda f: damage_metrics(f, lambda m: m["run"].pop("method")), "run.method is missing"),
    "list_seed": (lambda f: damage_metrics(f, lambda m: m["run"].update(seed=[0, 1])), r"run.seed is \[0, 1\]"),
    "string_task": (lambda f: damage_metrics(f, lambda m: m["tasks"].update(hearsay="0.9")),
                    "tasks.hearsay is str, not an object of scores"),
}


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


def test_statute_rows_for_proslex_runs(tmp_path):
    root = tmp_path / "runs"
    good = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
    ft = write_run(root / "ft", "finetune", "inlegalbert", 0, {"proslex": good})
    metrics = json.loads((ft / "metrics.json").read_text())
    metrics["tasks"]["proslex"].update(rouge1_f=0.412, bertscore_f=0.655)  # its evidence's explanation scores
    (ft / "metrics.json").write_text(json.dumps(metrics))
    write_run(root / "icl", "incontext", "smollm2", 0, {"proslex": [["IPC 302"]] * 12},
              extra={"prompt": "zero_shot", "k": 0, "answer": "generate"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=50,
                  baselines=[str(ROOT / "src" / "legalft" / "reporting" / "published_baselines.csv")])
    rows = measured_rows(out)
    assert rows["proslex"]["encoder inlegalbert"].startswith("1.000 [") and rows["proslex"]["metric"] == "macro_f1"
    assert rows["proslex: IPC 302"]["incontext smollm2 zero_shot k=0 generate"] == "0.667"  # precision 1/2, recall 1
    assert rows["proslex"]["reported: DeepSeek few-shot"] == "0.710" and rows["proslex"]["metric"] == "macro_f1"
    # a published number in another metric is in a row of that metric, beside each method's own value of it
    by_metric = {(r["task"], r["metric"]): r for r in read_display(out)}
    assert rows["proslex"]["reported: InLegalBERT fine-tuned"] == ""
    accuracy = by_metric[("proslex", "accuracy")]
    assert accuracy["reported: InLegalBERT fine-tuned"] == "0.820" and accuracy["encoder inlegalbert"] == "1.000"
    assert accuracy["incontext smollm2 zero_shot k=0 generate"] == "0.250"  # 3 of 12 label sets exactly right
    rouge, bertscore = by_metric[("proslex", "rouge1_f")], by_metric[("proslex", "bertscore_f")]
    assert rouge["reported: GPT-4 explanations"] == "0.200" and rouge["encoder inlegalbert"] == "0.412"
    assert bertscore["reported: GPT-4 explanations"] == "0.670" and bertscore["encoder inlegalbert"] == "0.655"
    assert rouge["incontext smollm2 zero_shot k=0 generate"] == ""  # it gave no explanations
    assert "published numbers for these tasks are in the metric the tasks are measured in" in (
        out / "report.md").read_text()


def test_per_label_rows_are_grouped_by_their_task(tmp_path):
    """A second multi-label task's labels get rows of their own, never PROSLEX's."""
    root = tmp_path / "runs"
    good = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
    run = write_run(root / "ft", "encoder", "minilm", 0, {"proslex": good})
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["tasks"]["clauses"] = {**metrics["tasks"]["proslex"], "category": "contracts"}
    (run / "metrics.json").write_text(json.dumps(metrics))
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records + [
        {**r, "task": "clauses"} for r in records]))
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=20)
    categories = {row["task"]: row["category"] for row in read_display(out)}
    assert categories["proslex: IPC 302"] == "proslex: per label"
    assert categories["clauses: IPC 302"] == "clauses: per label" and categories["clauses"] == "contracts"


@pytest.mark.slow  # starts W&B
def test_the_table_goes_to_an_active_wandb_run(runs_root, tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run = wandb.init(project="legalft-test", dir=str(tmp_path))
    try:
        compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
        assert "comparison" in run.summary.keys()
    finally:
        wandb.finish()
        wandb.teardown()  # stops the W&B service this process started (later runs must not share it)
        os.environ.pop("WANDB_SERVICE", None)


@pytest.mark.slow
def test_report_over_runs_the_entry_points_wrote(tmp_path, tiny_bert_dir, tiny_causal_lm_dir):
    """A data-efficiency study and an in-context baseline on the sample, then the report, all as a user runs them."""
    from test_end_to_end import run_script

    runs = tmp_path / "runs"
    trained = run_script("train.py", "-m", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}",
                         "model.max_length=64", "windows.stride=16", "windows.max_chunks=4", "method.lr=3e-3",
                         "method.head_lr=3e-3", "trainer.max_epochs=3", "logger=none", "protocol.train_size=24,48",
                         f"hydra.sweep.dir={runs}/finetune")
    assert trained.returncode == 0, trained.stderr[-3000:]
    prompted = run_script("evaluate.py", "prompt=proslex_fewshot", "model=smollm2",
                          f"model.pretrained={tiny_causal_lm_dir}", "data=proslex_sample", "prompt.max_new_tokens=6",
                          "prompt.max_input_words=60", f"hydra.run.dir={runs}/incontext")
    assert prompted.returncode == 0, prompted.stderr[-3000:]
    out = tmp_path / "report"
    result = run_script("report.py", f"runs={runs}/**", f"out={out}", "report.resamples=50")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"report: {out}/report.md" in result.stdout
    rows = measured_rows(out)
    columns = set(rows["proslex_sample"])
    from legalft.kit.fusion import model_label

    for size, folder in zip((24, 48), sorted((runs / "finetune").glob("[0-9]*"), key=lambda f: int(f.name))):
        use = json.loads((folder / "fusion.json").read_text())["use"]  # chosen on held-out macro-F1
        assert f"encoder {model_label('minilm', use)} n={size}" in columns
    assert any(c.startswith("incontext smollm2 few_shot") for c in columns)
    assert (out / "data_efficiency_proslex_sample.png").exists()
    assert "proslex_sample" in (out / "significance_tasks.csv").read_text()

    empty = run_script("report.py", f"runs={tmp_path}/nothing/**", f"out={tmp_path}/r2")
    assert empty.returncode == 2 and "matches nothing" in empty.stderr and not (tmp_path / "r2").exists()


@pytest.mark.slow
def test_a_report_with_logger_wandb_is_a_wandb_run_of_its_own(runs_root, tmp_path):
    from test_end_to_end import run_script
    from test_incontext import wandb_records

    from conftest import ROOT

    out, wandb_home = tmp_path / "report", tmp_path / "checkpoints"
    stray = ROOT / "wandb_run_id"  # a run folder's file, which a report has none of
    stray_before = stray.exists()
    result = run_script("report.py", f"runs={runs_root}/*", f"out={out}", "report.resamples=20",
                        "logger=wandb", f"paths.checkpoints_dir={wandb_home}", env={"WANDB_API_KEY": ""})  # offline
    assert result.returncode == 0, result.stderr[-3000:]
    history, job_types, artifacts, tags, config = set(), set(), 0, set(), {}
    for record in wandb_records(wandb_home):
        kind = record.WhichOneof("record_type")
        if kind == "run":  # wandb.init's config arrives with the run record
            job_types.add(record.run.job_type)
            tags |= set(record.run.tags)
            config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        if kind == "history":
            history |= {item.key or "/".join(item.nested_key) for item in record.history.item}
        artifacts += kind == "artifact" and record.artifact.type == "report"
    assert {"table/nrows", "significance_tasks/nrows"} <= history  # the long table and the paired tests
    assert any(key.startswith("figures/category_bars") for key in history)
    assert job_types == {"report"} and artifacts == 1  # the report folder, as an artifact
    assert tags == {"report", "report:compare"}, tags  # the command, and the report it wrote
    assert config["config"]["report"]["resamples"] == 20 and config["runs"] == f"{runs_root}/*"
    assert "logger" not in config["config"] and stray.exists() == stray_before
    assert not [p for p in out.rglob("*") if "wandb" in p.name]  # out holds the report and nothing else


def test_appendix_confusion_matrices_and_per_label_rows(runs_root, tmp_path):
    write_run(runs_root / "statutes", "encoder", "inlegalbert", 0,
              {"proslex": [["IPC 302"], ["IPC 302"], ["IPC 420"], ["IPC 201"]] * 3})
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    appendix = (out / "appendix.md").read_text()
    hearsay = appendix.split("## hearsay")[1].split("## ")[0]
    # the encoder's seed-0 run got examples 1 (gold No) and 2 (gold Yes) wrong: 9 right of each class
    encoder = hearsay.split("**encoder minilm**")[1].split("**")[0]
    assert re.search(r"\| no\s+\|\s+9 \|\s+1 \|", encoder) and re.search(r"\| yes\s+\|\s+1 \|\s+9 \|", encoder)
    proslex = appendix.split("## proslex")[1]
    assert "IPC 201" in proslex and "precision" in proslex and "recall" in proslex
    assert "[appendix.md](appendix.md)" in (out / "report.md").read_text()


def test_calibration_from_label_scores(runs_root, tmp_path):
    """An in-context run's label log-likelihoods: the reliability diagram pools its decisions and a
    confidence of softmax(scores) is what it draws."""
    from legalft.reporting.appendix import confidence_pairs
    from legalft.reporting.runs import read_run

    path = runs_root / "icl" / "predictions.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:  # the predicted label twice as likely as the other
        other = "No" if record["prediction"] == "Yes" else "Yes"
        record["scores"] = {record["prediction"]: math.log(2 / 3), other: math.log(1 / 3)}
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    confidence, correct = confidence_pairs(read_run(runs_root / "icl"))
    assert confidence == pytest.approx([2 / 3] * 20) and correct.sum() == 10
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    svg = (out / "calibration.svg").read_text()
    assert "ECE 0.167, 20 decisions" in svg  # |0.5 - 2/3| in the one bin that holds every decision


def test_too_few_resamples_for_holm_over_many_tasks_is_said():
    from legalft.reporting.marks import resolution_note

    tests = [{"method_a": "a", "method_b": "b"}] * 28
    note = resolution_note(tests, 1000, "holm")
    assert "cannot fall below 0.056" in note and "at least 1120" in note  # 28 * 2 / 1001; 2 * 28 / (R + 1) < 0.05
    assert "0.050" in resolution_note(tests, 1119, "holm") and resolution_note(tests, 1120, "holm") is None
    assert resolution_note(tests, 1000, "bh") is None


def test_an_interval_that_excludes_zero_without_an_adjusted_significance_is_explained():
    from legalft.reporting.marks import interval_disagreements

    base = {"task": "proa", "method_a": "tuned", "method_b": "prompted", "metric": "balanced_accuracy"}
    apart = {**base, "ci_low": 0.01, "ci_high": 0.12, "p_permutation": 0.03, "p_holm": 0.21}
    (note,) = interval_disagreements([apart], "holm")
    assert note.startswith("proa (tuned - prompted, balanced_accuracy): the 95% bootstrap interval [0.010, 0.120] "
                           "excludes 0 but the Holm-adjusted permutation p is 0.210")
    assert "not widened for the other tasks" in note
    agreeing = [{**apart, "p_holm": 0.01}, {**apart, "ci_low": -0.02}]  # significant; or an interval over 0
    assert interval_disagreements(agreeing, "holm") == []


def test_a_lock_file_the_report_did_not_make_is_left_where_it_was(runs_root, tmp_path):
    """Only the lock file a report made is removed when it ends; one already there (another command's,
    or left by a killed report) stays."""
    lock = tmp_path / ".report.lock"
    lock.write_text("")
    compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    assert lock.exists() and (tmp_path / "report" / "report.md").exists()
    compare(str(runs_root / "*"), str(tmp_path / "other"), resamples=20)
    assert not (tmp_path / ".other.lock").exists()  # its own, removed


def test_a_method_run_once_per_task_gets_each_tasks_interval_from_the_run_that_scored_it(tmp_path):
    """A multirun over tasks (one encoder or LLM-classifier run per task): every cell is one run's, and its
    interval over the test rows comes from the run that scored that task."""
    root = tmp_path / "runs"
    write_run(root / "hearsay", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1, 2}, YES_NO)},
              extra={"config_digest": "data.tasks=[hearsay]"})
    write_run(root / "abercrombie", "encoder", "minilm", 0, {"abercrombie": noisy(ABERCROMBIE_GOLD, {1}, MARKS)},
              extra={"config_digest": "data.tasks=[abercrombie]"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=50)
    rows = measured_rows(out)
    for task in ("hearsay", "abercrombie"):
        cell = rows[task]["encoder minilm"]
        assert re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", cell), (task, cell)
