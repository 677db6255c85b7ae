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
    docs = read_documents(str(path))
    assert [(d.id, d.text, d.labels) for d in docs] == [("A-1", "The accused stole a car.", ()),
                                                        ("A-2", "He threatened her.", ())]  # labels never read


def test_named_columns_and_row_numbers_as_ids(tmp_path):
    path = tmp_path / "cases.tsv"
    path.write_text("body\tnote\nfirst document\tx\nsecond document\ty\n")
    assert [(d.id, d.text) for d in read_documents(str(path), text_column="body")] == [
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
    assert [(d.id, d.text) for d in read_documents(str(folder))] == [("a", "first"), ("b", "second")]
    collection = tmp_path / "val_collection_IPC_302.json"
    collection.write_text(json.dumps({"2015.INSC.1.txt": {"fact": "The facts.", "statute": ["s3"]}}))
    (doc,) = read_documents(str(collection))
    assert (doc.id, doc.text, doc.labels) == ("2015.INSC.1.txt", "The facts.", ())


def test_standard_input_is_a_document_a_line():
    docs = read_documents("-", stdin=io.BytesIO("first case\n\n second case \n".encode()))
    assert [(d.id, d.text) for d in docs] == [("1", "first case"), ("2", "second case")]


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
