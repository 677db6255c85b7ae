import logging

import pytest

from conftest import LABEL_MAP, SAMPLE, proslex_doc, write_collection
from legalft.data.proslex import ProslexSource, read_split
from legalft.foundation.errors import UserError

LABELS = {code: entry["label"] for code, entry in LABEL_MAP.items()}


class Split:
    """A PROSLEX source whose tasks come split as a run splits them (``legalft.data.protocol``)."""

    def __init__(self, source: ProslexSource, **protocol) -> None:
        from legalft.data.protocol import Protocol

        self.source, self.protocol = source, Protocol(**protocol)

    def load(self):
        return self.protocol.applied(self.source.load(), self.source.validation_from_train)


def source(val_fraction: float = 0.1, seed: int = 0, **kwargs) -> Split:
    return Split(ProslexSource(label_map=LABEL_MAP, **kwargs), val_fraction=val_fraction, seed=seed)


def test_reads_documents_labels_and_explanations(tmp_path):
    path = write_collection(
        tmp_path, "train_collection_IPC_302.json",
        {
            "2001.INSC.1.txt": proslex_doc(
                "A mob attacked and killed him.", ["s3", "s1"],
                {"A mob attacked": ["s1"], "killed him": ["s3"], "and killed": ["s1", "s3"],
                 "a riot in another case": ["s1"]},
            ),
            "2001.INSC.2.txt": proslex_doc("He threatened the witness.", ["s7"]),
        },
    )
    examples = read_split([path], LABELS)
    assert [e.id for e in examples] == ["2001.INSC.1.txt", "2001.INSC.2.txt"]
    assert examples[0].labels == ("IPC 147", "IPC 302")
    # a span that is not in the facts (another case's) is no evidence: legalft.data.noise
    assert examples[0].explanations == {"IPC 147": ("A mob attacked", "and killed"),
                                        "IPC 302": ("killed him", "and killed")}
    assert examples[0].meta["source_file"] == "train_collection_IPC_302.json"
    assert examples[1].text == "He threatened the witness."


def test_root_layout_with_explicit_paths_winning(tmp_path):
    write_collection(tmp_path / "Train", "a.json", {"t1": proslex_doc(), "t2": proslex_doc(statute=["s1"])})
    write_collection(tmp_path / "Validation", "a.json", {"v1": proslex_doc()})
    write_collection(tmp_path / "Test", "a.json", {"x1": proslex_doc()})
    other_test = write_collection(tmp_path / "elsewhere", "b.json", {"y1": proslex_doc(), "y2": proslex_doc()})
    (splits,) = source(root=str(tmp_path)).load()
    assert [e.id for e in splits.val] == ["v1"] and [e.id for e in splits.test] == ["x1"]
    (splits,) = source(root=str(tmp_path), test_path=str(other_test)).load()
    assert [e.id for e in splits.test] == ["y1", "y2"]


def test_missing_validation_is_carved_from_train_stratified(tmp_path):
    docs = {f"d{i}": proslex_doc(statute=[["s1"], ["s3"], ["s7"], ["s1", "s3"]][i % 4]) for i in range(40)}
    write_collection(tmp_path / "Train", "a.json", docs)
    (splits,) = source(root=str(tmp_path), val_fraction=0.25, seed=3).load()
    # iterative stratification trades exact sizes for label balance
    assert len(splits.train) + len(splits.val) == 40 and 7 <= len(splits.val) <= 13 and splits.test is None
    assert not {e.id for e in splits.train} & {e.id for e in splits.val}
    for label in ("IPC 147", "IPC 302", "IPC 506"):  # every label on both sides
        assert any(label in e.labels for e in splits.val)
        assert any(label in e.labels for e in splits.train)


def test_sample_loads_through_the_data_config_layout():
    label_map = {f"s{i}": {"label": f"L{i}"} for i in range(1, 8)}
    (splits,) = ProslexSource(label_map=label_map, root=str(SAMPLE)).load()
    assert (len(splits.train), len(splits.val), len(splits.test)) == (98, 35, 35)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"root": "/nonexistent/proslex"}, ["data.root", "/nonexistent/proslex", "Legal_Statute_Prediction_Explanation"]),
        ({"train_path": "/nonexistent/train.json"}, ["data.train_path", "/nonexistent/train.json"]),
        ({}, ["data.root and data.train_path are both unset"]),
    ],
)
def test_missing_data_says_where_proslex_comes_from(kwargs, expected):
    with pytest.raises(UserError) as err:
        source(**kwargs).load()
    for text in expected:
        assert text in str(err.value)


def test_malformed_json_names_file_and_position(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"d1": {"fact": "x",\n  "statute": ["s3"],,}}')
    with pytest.raises(UserError, match=r"bad.json: malformed JSON at line 2, column 21"):
        read_split([path], LABELS)


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"statute": ["s3"]}, r"document 'd1' lacks a 'fact' or 'statute'"),
        ({"fact": "text"}, r"document 'd1' lacks a 'fact' or 'statute'"),
        ({"fact": "   ", "statute": ["s3"]}, r"document 'd1' has an empty 'fact'"),
        ({"fact": "text", "statute": []}, r"document 'd1': 'statute' must be a non-empty list"),
        ({"fact": "text", "statute": [["s1"]]}, r"document 'd1': 'statute' must be a non-empty list .*not \[\[\"s1\"\]\]"),
        ({"fact": "text", "statute": ["s3"], "explanation": "text"}, r"document 'd1': 'explanation' must map spans"),
        ({"fact": "text", "statute": ["s3"], "explanation": {"span": "s3"}}, r"'explanation' must map spans"),
    ],
)
def test_bad_documents_are_named(tmp_path, doc, message):
    path = write_collection(tmp_path, "c.json", {"d1": doc})
    with pytest.raises(UserError, match=message) as err:
        read_split([path], LABELS)
    assert "c.json" in str(err.value)


def unknown_code_file(tmp_path):
    return write_collection(
        tmp_path, "c.json",
        {"d1": proslex_doc(statute=["s3", "s34"]), "d2": proslex_doc(statute=["s34"]), "d3": proslex_doc()},
    )


def test_unknown_code_error_policy_reports_counts(tmp_path):
    with pytest.raises(UserError, match=r"unknown statute codes 's34' x2 .* 2 document\(s\): d1 \(c.json\), d2"):
        read_split([unknown_code_file(tmp_path)], LABELS, unknown_labels="error")


def test_unknown_code_drop_label_is_reported_not_silent(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        examples = read_split([unknown_code_file(tmp_path)], LABELS, unknown_labels="drop_label")
    assert [(e.id, e.labels) for e in examples] == [("d1", ("IPC 302",)), ("d3", ("IPC 302",))]
    assert "'s34' x2" in caplog.text and "drop_label" in caplog.text


def test_unknown_code_drop_document(tmp_path):
    examples = read_split([unknown_code_file(tmp_path)], LABELS, unknown_labels="drop_document")
    assert [e.id for e in examples] == ["d3"]


def test_a_document_in_two_splits_is_dropped_from_the_training_side_and_named(tmp_path, caplog):
    write_collection(tmp_path / "Train", "a.json", {"same.txt": proslex_doc(), "t2": proslex_doc(), "v1": proslex_doc()})
    write_collection(tmp_path / "Validation", "a.json", {"v1": proslex_doc(), "both.txt": proslex_doc()})
    write_collection(tmp_path / "Test", "b.json", {"same.txt": proslex_doc(), "both.txt": proslex_doc(),
                                                   "copy.txt": proslex_doc("The facts of t3, under another id.")})
    write_collection(tmp_path / "Train", "b.json", {"t3": proslex_doc("The facts of t3, under another id.")})
    with caplog.at_level(logging.WARNING):
        (task,) = source(root=str(tmp_path)).load()
    assert [e.id for e in task.train] == ["t2"] and [e.id for e in task.val] == ["v1"]
    assert [e.id for e in task.test] == ["same.txt", "both.txt", "copy.txt"]
    assert task.notes["train"]["dropped_in_a_later_split"] == 3 and task.notes["val"]["dropped_in_a_later_split"] == 1
    assert "3 document(s) of the train split also in the validation or test split (the same id or the same facts), " \
        "left out of train: same.txt, v1, t3" in caplog.text


def test_duplicate_ids_within_a_split(tmp_path):
    a = write_collection(tmp_path, "a.json", {"d1": proslex_doc()})
    b = write_collection(tmp_path, "b.json", {"d1": proslex_doc()})
    with pytest.raises(UserError, match=r"b.json: document 'd1' also appears in .*a.json"):
        read_split([a, b], LABELS)


def test_unknown_policy_name_is_rejected(tmp_path):
    with pytest.raises(UserError, match="data.unknown_labels='skip'"):
        read_split([unknown_code_file(tmp_path)], LABELS, unknown_labels="skip")


def test_single_label_mode_refuses_multi_label_documents(tmp_path):
    write_collection(tmp_path / "Train", "a.json", {"t1": proslex_doc(), "t2": proslex_doc(statute=["s1", "s3"])})
    write_collection(tmp_path / "Validation", "a.json", {"v1": proslex_doc()})
    with pytest.raises(UserError, match=r"data.multi_label=false, but document 't2' \(a.json, train split\) has 2"):
        source(root=str(tmp_path), multi_label=False).load()


def test_explicit_train_path_needs_no_root_folder(tmp_path):
    train = write_collection(tmp_path, "train.json", {f"d{i}": proslex_doc(statute=[["s1"], ["s3"]][i % 2]) for i in range(10)})
    (splits,) = source(root=str(tmp_path / "absent"), train_path=str(train), val_fraction=0.2).load()
    assert len(splits.train) + len(splits.val) == 10 and splits.test is None


def test_bytes_that_are_not_utf8_are_named_with_their_offset(tmp_path):
    path = tmp_path / "Train" / "a.json"
    path.parent.mkdir()
    path.write_bytes(b'{"t1": {"fact": "Caf\xe9 owner stabbed", "statute": ["s3"]}}')
    with pytest.raises(UserError, match=r"a.json: not UTF-8 text: byte 0xe9 at offset 20 \(line 1\)"):
        source(root=str(tmp_path)).load()


def test_a_key_twice_in_one_object_is_refused_with_the_id(tmp_path):
    path = tmp_path / "Train" / "a.json"
    path.parent.mkdir()
    path.write_text('{"t1": {"fact": "First.", "statute": ["s3"]}, "t1": {"fact": "Second.", "statute": ["s1"]}}')
    with pytest.raises(UserError, match=r"a.json: document id\(s\) 't1' appear more than once"):
        source(root=str(tmp_path)).load()
    path.write_text('{"t1": {"fact": "First.", "statute": ["s3"], "statute": ["s1"]}}')
    with pytest.raises(UserError, match=r"document 't1' has the field\(s\) 'statute' twice"):
        source(root=str(tmp_path)).load()


@pytest.mark.parametrize("size", [8, 16, 24, 33])
def test_a_training_subset_has_exactly_the_asked_size_and_depends_on_the_seed(size):
    from legalft.data.proslex import ProslexSource
    from legalft.data.splitting import stratified_subset

    from conftest import SAMPLE

    (task,) = ProslexSource(label_map={f"s{i}": {"label": f"L{i}"} for i in range(1, 8)}, root=str(SAMPLE)).load()
    subsets = [stratified_subset(task.train, size, seed) for seed in (0, 0, 1)]
    assert all(len(subset) == size and len({e.id for e in subset}) == size for subset in subsets)
    assert [e.id for e in subsets[0]] == [e.id for e in subsets[1]]
