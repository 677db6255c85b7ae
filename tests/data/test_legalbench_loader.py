import pytest

from conftest import write_legalbench_task as write_task
from legalft.data.legalbench import LegalBenchSource, catalog, render, resolve_task_names
from legalft.foundation.errors import UserError
from legalft.llm.prompts import PromptBuilder


def test_catalog_knows_all_162_tasks_with_category_and_metric():
    tasks = catalog()
    assert len(tasks) == 162
    assert {e.category for e in tasks.values()} == {"issue", "rule", "conclusion", "interpretation", "rhetoric"}
    assert tasks["hearsay"].metric == "balanced_accuracy" and tasks["hearsay"].category == "conclusion"
    assert tasks["sara_numeric"].metric == "within_10pct" and tasks["rule_qa"].metric == "manual"
    assert {n for n, e in tasks.items() if e.metric == "f1"} == {
        "successor_liability", "ssla_company_defendants", "ssla_individual_defendants", "ssla_plaintiff"}


def test_unknown_task_suggests_the_closest():
    with pytest.raises(UserError, match="no LegalBench task 'hearsey'. Did you mean 'hearsay'"):
        resolve_task_names(["hearsey"])
    assert len(resolve_task_names("all")) == 162


def test_multi_column_task_renders_its_placeholders(tmp_path):
    write_task(
        tmp_path, "corporate_lobbying",
        "index\tanswer\tbill_title\tcompany_name\n0\tYes\tClean Air Act\tAcme\n1\tNo\tFarm Bill\tBeta\n",
        "index\tanswer\tbill_title\tcompany_name\n7\tNo\tTax Act\tGamma\n",
        prompt="Bill: {{bill_title}}\nCompany: {{company_name}}\nRelevant?",
    )
    (task,) = LegalBenchSource(root=str(tmp_path), tasks=["corporate_lobbying"]).load()
    assert task.spec.labels == ("No", "Yes") and task.spec.metric == "balanced_accuracy"
    assert task.spec.description == "Decide the thing."
    assert task.test[0].id == "7" and task.test[0].fields == {"bill_title": "Tax Act", "company_name": "Gamma"}
    assert PromptBuilder("base_prompt").build(task, task.test) == ["Bill: Tax Act\nCompany: Gamma\nRelevant?"]
    zero = PromptBuilder("zero_shot").build(task, task.test)[0]
    assert zero == "Decide the thing. Answer with one of: No, Yes.\n\nBill title: Tax Act\nCompany name: Gamma\nAnswer:"


def test_few_shot_random_demonstrations_are_seeded(tmp_path):
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tcase {i}\n" for i in range(8))
    write_task(tmp_path, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n20\tYes\tnew case\n")
    (task,) = LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()
    first = PromptBuilder("few_shot", k=3, seed=1).build(task, task.test)[0]
    assert first == PromptBuilder("few_shot", k=3, seed=1).build(task, task.test)[0]
    assert first.count("\nAnswer: ") == 3 and first.endswith("new case\nAnswer:")
    with pytest.raises(UserError, match="prompt.k=9: task 'hearsay' has only 8 train rows"):
        PromptBuilder("few_shot", k=9).build(task, task.test)


def test_unfilled_placeholder_is_an_error():
    with pytest.raises(UserError, match=r"placeholder\(s\) \['question'\] have no column"):
        render("{{text}} {{question}}", {"text": "x"}, "t/base_prompt.txt")


@pytest.mark.parametrize(
    "train, message",
    [
        ("index\ttext\n0\tx\n", "no 'answer' column"),
        ("index\tanswer\ttext\n0\tYes\tx\textra\n", "row 1 \\(line 2\\) has 4 fields where the header has 3"),
        ("index\tanswer\ttext\n0\tYes\n", "ragged row"),
        ("index\tanswer\ttext\n0\tYes\t  \n", "empty input"),
    ],
)
def test_bad_tsv_files(tmp_path, train, message):
    write_task(tmp_path, "hearsay", train, "index\tanswer\ttext\n1\tNo\ty\n")
    with pytest.raises(UserError, match=message):
        LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()


def test_missing_split_and_missing_root(tmp_path):
    write_task(tmp_path, "hearsay", "index\tanswer\ttext\n0\tYes\tx\n")
    with pytest.raises(UserError, match="missing test split of task 'hearsay'"):
        LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()
    (task,) = LegalBenchSource(root=str(tmp_path), tasks=["hearsay"], splits=["train"]).load()
    assert task.test is None
    with pytest.raises(UserError, match="has no tasks/ folder"):
        LegalBenchSource(root=str(tmp_path / "nowhere"), tasks=["hearsay"]).load()


def test_test_label_outside_the_label_space(tmp_path):
    write_task(tmp_path, "hearsay", "index\tanswer\ttext\n0\tYes\tx\n1\tNo\ty\n", "index\tanswer\ttext\n2\tMaybe\tz\n")
    with pytest.raises(UserError, match=r"labels \['Maybe'\] never occur in the train split"):
        LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()


def test_hub_offline_says_what_to_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match=r"could not fetch nguha/legalbench .*hf download nguha/legalbench"):
        LegalBenchSource(tasks=["hearsay"], hub=True).load()


def test_hub_archive_is_extracted_once_and_read_like_a_local_copy(tmp_path, monkeypatch):
    """The hub path without the hub: hf_hub_download replaced by a data.tar.gz laid out as the
    dataset's (data/<task>/...), so the extraction and lookup code runs for real."""
    import tarfile

    import huggingface_hub

    source_dir = tmp_path / "archive_source"
    write_task(source_dir, "hearsay", "index\tanswer\ttext\n0\tYes\ta\n1\tNo\tb\n", "index\tanswer\ttext\n5\tNo\tc\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    with tarfile.open(cache / "data.tar.gz", "w:gz") as tar:
        tar.add(source_dir / "tasks", arcname="data")
    calls = []

    def fake_download(repo_id, filename, repo_type):
        calls.append((repo_id, filename, repo_type))
        return str(cache / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    killed = cache / "extracting"  # what an extraction killed midway used to leave: not this call's to use or delete
    (killed / "data").mkdir(parents=True)
    first = LegalBenchSource(tasks=["hearsay"], hub=True).load()
    second = LegalBenchSource(tasks=["hearsay"], hub=True).load()
    assert calls[0] == ("nguha/legalbench", "data.tar.gz", "dataset")
    assert [e.id for e in first[0].train] == ["0", "1"] and first[0].test[0].labels == ("No",)
    assert [e.id for e in second[0].test] == ["5"] and (cache / "extracted").is_dir()
    assert sorted(p.name for p in cache.iterdir()) == ["data.tar.gz", "extracted", "extracting"]
    assert list(killed.rglob("*")) == [killed / "data"]


def test_test_folds_partition_the_test_split():
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.methods.lora.plan import test_folds

    def example(i):
        return Example(id=str(i), text=f"t{i}", labels=("Yes" if i % 2 else "No",))

    task = Task(spec=TaskSpec(name="hearsay", labels=("No", "Yes"), multi_label=False),
                train=[example(i) for i in range(3)], test=[example(i) for i in range(10, 20)],
                base_prompt="{{text}}")
    folds = test_folds(task, 3, seed=0)
    held_out = [e.id for fold in folds for e in fold.test]
    assert sorted(held_out) == sorted(e.id for e in task.test) and len(held_out) == 10
    for fold in folds:
        trained = {e.id for e in fold.train}
        assert {"0", "1", "2"} <= trained and not trained & {e.id for e in fold.test}
        assert len(trained) == 3 + 10 - len(fold.test)
    with pytest.raises(UserError, match="fewer than method.folds=20"):
        test_folds(task, 20, seed=0)


def test_a_tsv_that_is_not_utf8_is_named_with_its_offset(tmp_path):
    folder = write_task(tmp_path, "hearsay", "index\tanswer\ttext\n0\tYes\tok\n", "index\tanswer\ttext\n0\tNo\tx\n")
    (folder / "test.tsv").write_bytes(b"index\tanswer\ttext\n0\tNo\tna\xefve\n")
    with pytest.raises(UserError, match=r"test.tsv: not UTF-8 text: byte 0xef at offset 25 \(line 2\)"):
        LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()


def test_a_placeholder_without_its_column_names_the_column(tmp_path):
    write_task(tmp_path, "hearsay", "index\tanswer\tstatement\n0\tYes\tHe said so.\n",
               "index\tanswer\tstatement\n0\tNo\tShe did.\n", prompt="Q: {{text}}\nA:")
    with pytest.raises(UserError, match=r"train.tsv: the prompt's placeholder\(s\) \['text'\] name no column of this "
                                        r"file \(columns: \['index', 'statement'\]\)"):
        LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load()


def test_readme_is_found_whatever_its_case(tmp_path):
    folder = write_task(tmp_path, "abercrombie", "index\tanswer\ttext\n0\tgeneric\tok\n",
                        "index\tanswer\ttext\n0\tgeneric\tx\n", readme="# a\n\n### Classify the mark.\n")
    (folder / "README.md").rename(folder / "README.MD")
    (task,) = LegalBenchSource(root=str(tmp_path), tasks=["abercrombie"]).load()
    assert task.spec.description == "Classify the mark."


def test_protocol_limit_takes_rows_of_every_label_the_same_for_every_run(tmp_path):
    """LegalBench's test files are sorted by label: the first rows would all be "No"."""
    rows = "".join(f"{i}\t{'No' if i < 12 else 'Yes'}\tstatement {i}\n" for i in range(16))
    write_task(tmp_path, "hearsay", "index\tanswer\ttext\n0\tNo\ta\n1\tYes\tb\n", "index\tanswer\ttext\n" + rows)
    from legalft.data.protocol import Protocol

    def limited(limit, mode="stratified"):
        return Protocol(limit=limit, limit_mode=mode).applied(LegalBenchSource(root=str(tmp_path), tasks=["hearsay"]).load(),
                                                              False)

    (task,) = limited(4)
    gold = [e.labels[0] for e in task.test]
    assert len(gold) == 4 and gold.count("Yes") == 1 and gold.count("No") == 3  # the split's 3:1, in the file's order
    assert [int(e.id) for e in task.test] == sorted(int(e.id) for e in task.test)
    (again,) = limited(4)
    assert [e.id for e in again.test] == [e.id for e in task.test]
    (whole,) = limited(40)
    assert len(whole.test) == 16
    (first,) = limited(4, "first")
    assert [e.id for e in first.test] == ["0", "1", "2", "3"]  # protocol.limit_mode=first: the file's first rows


def test_each_task_declares_what_its_answers_are(tmp_path):
    """TaskSpec.kind, which prompts, parsing and scoring switch on: a LegalBench task with a label space
    is "label", one scored as free text is "open"; a multi-label task is "label_set"."""
    from legalft.data.example import TaskSpec

    write_task(tmp_path, "hearsay", "index\tanswer\ttext\n0\tNo\ta\n1\tYes\tb\n", "index\tanswer\ttext\n2\tYes\tc\n")
    write_task(tmp_path, "sara_numeric", "index\tanswer\ttext\n0\t$10\ta\n", "index\tanswer\ttext\n1\t$20\tb\n")
    hearsay, numeric = LegalBenchSource(root=str(tmp_path), tasks=["hearsay", "sara_numeric"]).load()
    assert (hearsay.spec.kind, numeric.spec.kind) == ("label", "open")
    assert TaskSpec(name="s", labels=("a", "b"), multi_label=True).kind == "label_set"
    with pytest.raises(ValueError, match="TaskSpec.kind='generative'"):
        TaskSpec(name="s", labels=(), multi_label=False, kind="generative")
