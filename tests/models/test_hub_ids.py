"""A model card names its base by the Hub id, including for the offline copies the project knows."""

from legalft.models.adapter_files import hub_id


def test_a_hub_name_is_its_own_id_and_an_unknown_folder_has_none(tmp_path):
    assert hub_id("law-ai/InLegalBERT") == "law-ai/InLegalBERT"
    assert hub_id(str(tmp_path)) is None and hub_id("./my_model") is None


def test_the_offline_copies_are_named_by_the_hub_id_of_what_they_hold(minilm_path):
    from legalft.models.causal_lm import offline_smollm2_gguf

    assert hub_id(minilm_path) == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub_id(offline_smollm2_gguf()) == "HuggingFaceTB/SmolLM2-135M-Instruct"
