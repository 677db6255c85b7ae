"""The documents predict.py reads (legalft.data.unlabelled): tables with their text column found or named, a
folder of .txt files, PROSLEX collection files, standard input; bad input named by file, line or column."""

from __future__ import annotations

import io
import json

import pytest

from legalft.data.unlabelled import read_documents
from legalft.foundation.errors import UserError


def test_a_csv_with_common_column_names_needs_no_settings(tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("case_id,Facts,statute\nA-1,The accused stole a car.,IPC 379\nA-2,He threatened her.,IPC 506\n")
    docs, _ = read_documents(str(path))
    assert [(d.id, d.text, d.labels) for d in docs] == [("A-1", "The accused stole a car.", ()),
                                                        ("A-2", "He threatened her.", ())]  # labels never read


def test_named_columns_and_row_numbers_as_ids(tmp_path):
    path = tmp_path / "cases.tsv"
    path.write_text("body\tnote\nfirst document\tx\nsecond document\ty\n")
    assert [(d.id, d.text) for d in read_documents(str(path), text_column="body")[0]] == [
        ("1", "first document"), ("2", "second document")]
    with pytest.raises(UserError, match=r"input.text_column=facts: .* has no such column; its columns are body, note"):
        read_documents(str(path), text_column="facts")


def test_a_table_without_a_text_column_lists_its_columns(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"uid": 1, "summary": "x"}) + "\n")
    with pytest.raises(UserError, match=r"no text column found .* its columns are uid, summary. Name one with "
                                        r"input.text_column=..."):
        read_documents(str(path))


def test_a_folder_of_text_files_and_a_proslex_collection(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "b.txt").write_text("second\n")
    (folder / "a.txt").write_text("first\n")
    (folder / "notes.md").write_text("not a document")
    assert [(d.id, d.text) for d in read_documents(str(folder))[0]] == [("a", "first"), ("b", "second")]
    collection = tmp_path / "val_collection_IPC_302.json"
    collection.write_text(json.dumps({"2015.INSC.1.txt": {"fact": "The facts.", "statute": ["s3"]}}))
    (doc,), _ = read_documents(str(collection))
    assert (doc.id, doc.text, doc.labels) == ("2015.INSC.1.txt", "The facts.", ())


def test_standard_input_is_a_document_a_line_its_number_the_id():
    docs, skipped = read_documents("-", stdin=io.BytesIO("first case\n\n second case \n".encode()))
    assert [(d.id, d.text) for d in docs] == [("1", "first case"), ("3", "second case")] and skipped == ["2"]


def test_an_empty_document_is_skipped_and_named_whatever_the_input(tmp_path, caplog):
    """One rule: an empty cell, a null, an empty .txt file, a blank stdin line, an empty fact are never predicted."""
    import logging

    inputs = {"cases.csv": 'id,text\nc1,The facts.\nc2,""\nc3,  \n',
              "cases.jsonl": '{"id": "c1", "text": "The facts."}\n{"id": "c2", "text": null}\n{"id": "c3", "text": " "}\n',
              "collection.json": json.dumps({"c1": {"fact": "The facts."}, "c2": {"fact": None}, "c3": {"fact": ""}})}
    for name, content in inputs.items():
        (tmp_path / name).write_text(content)
        with caplog.at_level(logging.WARNING):
            docs, skipped = read_documents(str(tmp_path / name))
        assert [d.id for d in docs] == ["c1"] and skipped == ["c2", "c3"], name
        assert "2 empty document(s) skipped, not predicted: c2, c3" in caplog.text
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "c1.txt").write_text("The facts.")
    (folder / "c2.txt").write_text("\n")
    assert [d.id for d in read_documents(str(folder))[0]] == ["c1"] and read_documents(str(folder))[1] == ["c2"]
    (tmp_path / "only_empty.csv").write_text('id,text\nc1,""\n')
    with pytest.raises(UserError, match="no documents in it"):
        read_documents(str(tmp_path / "only_empty.csv"))


@pytest.mark.parametrize("content,message", [
    (b"text\n", "no documents in it"),
    (b"text\nok\ncaf\xe9\n", r"not UTF-8 text: byte 0xe9 at offset 11 \(line 3\)"),
    (b"id,text\n1,a\n1,b\n", "the ids '1' name more than one document"),
])
def test_bad_input_is_named(tmp_path, content, message):
    path = tmp_path / "cases.csv"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        read_documents(str(path))


def test_a_missing_input_and_an_unread_extension(tmp_path):
    with pytest.raises(UserError, match="no such file or folder"):
        read_documents(str(tmp_path / "absent.csv"))
    (tmp_path / "cases.xlsx").write_bytes(b"PK")
    with pytest.raises(UserError, match=r"a .xlsx is not read"):
        read_documents(str(tmp_path / "cases.xlsx"))
