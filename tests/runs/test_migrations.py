"""The one table of what earlier releases named otherwise (legalft.runs.migrations): the docs show it as it is."""

from __future__ import annotations

from conftest import ROOT


def test_docs_run_folders_table_is_the_migration_table():
    from legalft.runs.migrations import markdown_table

    docs = (ROOT / "docs" / "run-folders.md").read_text()
    assert markdown_table() in docs, "regenerate docs/run-folders.md's table from legalft.runs.migrations.markdown_table()"


def test_an_earlier_release_s_names_are_read_as_today_s():
    from legalft.methods.encoder import EncoderMethod
    from legalft.methods.lora.method import LoraMethod
    from legalft.runs.migrations import in_current_layout, method_named

    assert method_named("finetune") is EncoderMethod and method_named("qlora") is LoraMethod
    assert method_named("encoder") is EncoderMethod and method_named("nonesuch") is None
    saved = in_current_layout({"incontext": {"strategy": "zero_shot"}, "checkpoints": {"keep_last": True}})
    assert saved["prompt"]["strategy"] == "zero_shot" and "incontext" not in saved
    assert saved["checkpoints"] == {"keep_optimizer": True}
