"""Explanations and evidence: sentences of the facts, grounding of quotes, the paper's explanation metrics
(METEOR and BERTScore beside ROUGE and BLEU), and the evidence scorer every classifier run uses."""

from __future__ import annotations

import json
import logging

import pytest

from legalft.data.example import Example
from legalft.data.sentences import split_sentences
from legalft.foundation.errors import UserError
from legalft.evaluation.evidence import EvidenceSelector, add_evidence
from legalft.evaluation.explanations import explanation_scores
from legalft.evaluation.grounding import grounding_scores, locate

FACTS = ("Dr. Moon (P.W.7) held the autopsy. The accused struck the deceased with an axe.  He  died at once.\n"
         "The accused then hid the axe in a well. He said no.")


def test_sentences_keep_abbreviations_and_offsets():
    sentences = split_sentences(FACTS + " He said no.")
    assert [s.text for s in sentences] == [
        "Dr. Moon (P.W.7) held the autopsy.", "The accused struck the deceased with an axe.", "He  died at once.",
        "The accused then hid the axe in a well.", "He said no.", "He said no."]
    assert all((FACTS + " He said no.")[s.start:s.end] == s.text for s in sentences)
    assert sentences[-1].start > sentences[-2].start  # a repeated sentence: each occurrence once


@pytest.mark.parametrize("quote, how, found", [
    ("struck the deceased with an axe", "exact", "struck the deceased with an axe"),
    ("HE DIED   at once.", "normalized", "He  died at once."),
    ("the accused\nthen hid", "normalized", "The accused then hid"),
    ("The accused confessed to the murder.", "absent", None),
    ("   ", "absent", None),
])
def test_a_quote_is_found_exact_normalized_or_not_at_all(quote, how, found):
    got, span = locate(quote, FACTS)
    assert got == how
    assert (FACTS[span[0]:span[1]] if span else None) == found


def test_grounding_counts_made_up_quotes_and_scores_sentences_against_the_experts():
    experts = {"IPC 302": ("The accused struck the deceased with an axe.", "He  died at once."),
               "IPC 201": ("The accused then hid the axe in a well.",)}
    documents = [(FACTS, {"IPC 302": ["struck the deceased with an axe", "Dr. Moon (P.W.7) held the autopsy."],
                          "IPC 201": ["the accused burnt the body"],  # not in the facts
                          "IPC 147": ["He said no."]},  # a section that is not gold: not scored for evidence
                  experts)]
    scores = grounding_scores(documents)
    assert (scores["evidence_quotes"], scores["evidence_exact"], scores["evidence_not_in_facts"]) == (4, 3, 1)
    # IPC 302: 2 chosen, 1 right, of 2 expert sentences; IPC 201: nothing found, 1 expert sentence
    assert scores["evidence_sections_scored"] == 2
    assert scores["evidence_sentence_precision"] == pytest.approx(1 / 2)
    assert scores["evidence_sentence_recall"] == pytest.approx(1 / 3)
    assert scores["evidence_sentence_f1"] == pytest.approx(0.4)
    without_experts = grounding_scores([(FACTS, {"IPC 302": ["He said no."]}, {})])
    assert without_experts["evidence_sections_scored"] == 0 and "evidence_sentence_f1" not in without_experts


def test_explanation_scores_hold_the_papers_metrics_and_bertscore_with_a_local_model(minilm_path):
    same = explanation_scores(["the accused struck him with an axe"], ["the accused struck him with an axe"],
                              minilm_path)
    other = explanation_scores(["the weather was fine in Delhi"], ["the accused struck him with an axe"], minilm_path)
    for key in ("rouge1_f", "rouge2_f", "rougeL_f", "bleu", "meteor", "bertscore_f"):
        assert same[key] > other[key], key
    assert same["bertscore_f"] == pytest.approx(1.0, abs=1e-4) and same["meteor"] > 0.99
    assert same["bertscore_model"] == f"{minilm_path} layer 6" and isinstance(same["meteor_synonyms"], bool)


def test_a_bertscore_model_that_cannot_be_loaded_is_named_and_the_other_scores_stand(tmp_path, caplog):
    missing = str(tmp_path / "no_model")
    with caplog.at_level(logging.WARNING):
        scores = explanation_scores(["an axe"], ["an axe"], missing)
    assert scores["bertscore_model"] == f"{missing} (not loaded)" and "bertscore_f" not in scores
    assert scores["rouge1_f"] == 1.0 and "explanations.bertscore_model" in caplog.text


def spanned(i: int, labels: tuple[str, ...]) -> Example:
    """A document whose one sentence per section names its act, among sentences that name none."""
    acts = {"IPC 302": "The accused stabbed the victim to death.", "IPC 420": "The accused forged the sale deed."}
    filler = [f"The hearing was adjourned on day {i}.", f"Witness {i} lives in the village.",
              "The trial court framed the charges."]
    text = " ".join([filler[0], *(acts[label] for label in labels), *filler[1:]])
    return Example(id=str(i), text=text, labels=labels, explanations={label: (acts[label],) for label in labels})


def test_the_evidence_scorer_picks_the_sentences_experts_mark_and_survives_its_json(tmp_path):
    train = [spanned(i, (("IPC 302",), ("IPC 420",), ("IPC 302", "IPC 420"))[i % 3]) for i in range(30)]
    selector = EvidenceSelector.fit(train, ("IPC 302", "IPC 420"))
    document = spanned(99, ("IPC 302", "IPC 420"))
    chosen = selector.select(document.text, ["IPC 302", "IPC 420", "IPC 999"])  # one it never saw: no evidence
    assert chosen == {"IPC 302": ["The accused stabbed the victim to death."],
                      "IPC 420": ["The accused forged the sale deed."]}
    again = EvidenceSelector.from_json(selector.to_json(), "evidence.json")
    assert again.select(document.text, ["IPC 302", "IPC 420"]) == chosen
    saved = json.loads(selector.to_json())
    saved["vectorizers"][1]["idf"] = saved["vectorizers"][1]["idf"][:-1]
    with pytest.raises(UserError, match="evidence.json: not an evidence scorer this release reads"):
        EvidenceSelector.from_json(json.dumps(saved), "evidence.json")
    with pytest.raises(UserError, match="run/evidence.json: not an evidence scorer"):
        EvidenceSelector.from_json("{not json", "run/evidence.json")
    assert EvidenceSelector.fit([Example(id="1", text="No spans here.", labels=("IPC 302",))], ("IPC 302",)) is None


def test_the_evidence_is_every_sentence_the_scorer_calls_evidence_at_least_one():
    train = [spanned(i, (("IPC 302",), ("IPC 420",), ("IPC 302", "IPC 420"))[i % 3]) for i in range(30)]
    selector = EvidenceSelector.fit(train, ("IPC 302", "IPC 420"))
    twice = ("The hearing was adjourned. The accused stabbed the victim to death. The trial court framed the "
             "charges. The accused stabbed the witness to death as well.")
    assert selector.select(twice, ["IPC 302"]) == {"IPC 302": ["The accused stabbed the victim to death.",
                                                               "The accused stabbed the witness to death as well."]}
    assert len(selector.select("The hearing was adjourned. Witness 7 lives in the village.", ["IPC 302"])["IPC 302"]) == 1
    # files of earlier formats give what they gave when their runs were scored: the second (word n-grams, each
    # sentence alone) and the first (a fixed number a section)
    second = EvidenceSelector.fit(train, ("IPC 302", "IPC 420"), version=2)
    again = EvidenceSelector.from_json(second.to_json(), "evidence.json")
    assert json.loads(second.to_json())["format"] == 2 and again.select(twice, ["IPC 302"]) == second.select(
        twice, ["IPC 302"]) and again.weights.keys() == second.weights.keys()
    first = json.loads(second.to_json())
    first.update(format=1, sentences_per_section=3)
    old = EvidenceSelector.from_json(json.dumps(first), "evidence.json")
    assert len(old.select(twice, ["IPC 302"])["IPC 302"]) == 3
    assert json.loads(old.to_json())["sentences_per_section"] == 3 and json.loads(old.to_json())["format"] == 1


def test_evidence_is_added_for_predicted_sections_and_scored_on_the_correct_ones():
    train = [spanned(i, (("IPC 302",), ("IPC 420",))[i % 2]) for i in range(20)]
    selector = EvidenceSelector.fit(train, ("IPC 302", "IPC 420"))
    test = [spanned(50, ("IPC 302",)), spanned(51, ("IPC 420",))]
    records = [{"prediction": ["IPC 302"]}, {"prediction": []}]
    scores = add_evidence(records, test, selector, {"bertscore_model": None})
    assert records[0]["evidence"] == {"IPC 302": ["The accused stabbed the victim to death."]}
    assert "evidence" not in records[1]  # nothing predicted, nothing to explain
    assert scores["evidence_sections_scored"] == 1 and scores["evidence_sentence_f1"] == 1.0
    assert scores["evidence_missing"] == 0
    assert scores["explanations"] == 1 and scores["rouge1_f"] == 1.0 and "bertscore_model" not in scores
    assert add_evidence(records, test, None) == {}
    unknown = [{"prediction": ["IPC 302", "IPC 376"]}]  # IPC 376: no training span, so no evidence
    assert add_evidence(unknown, test[:1], selector, {"bertscore_model": None})["evidence_missing"] == 1


def test_a_quote_joining_sentences_from_different_places_is_found_sentence_by_sentence():
    from legalft.evaluation.grounding import locate_parts

    how, spans = locate_parts("Dr. Moon (P.W.7) held the autopsy. The accused then hid the axe in a well.", FACTS)
    assert how == "exact" and [FACTS[a:b] for a, b in spans] == [
        "Dr. Moon (P.W.7) held the autopsy.", "The accused then hid the axe in a well."]
    how, spans = locate_parts("He died at once. The accused burnt the body.", FACTS)
    assert how == "absent" and [FACTS[a:b] for a, b in spans] == ["He  died at once."]  # the made-up half


def words(saved: dict) -> dict:
    return saved["vectorizers"][0]


@pytest.mark.parametrize("damage", [
    lambda saved: saved.update(format=1, sentences_per_section=-3),
    lambda saved: saved.update(format=1),  # without its count and word vocabulary
    lambda saved: saved.update(sections={"IPC 302": {"weights": [float("nan")] * len(saved["sections"]["IPC 302"][
        "weights"]), "intercept": 0}}),
    lambda saved: words(saved).update(idf=[[1.0]] * len(words(saved)["idf"])),
    lambda saved: words(saved).update(vocabulary={term: 0 for term in words(saved)["vocabulary"]}),
    lambda saved: saved.update(sections=[]),
    lambda saved: saved.update(format=4),
    lambda saved: saved["vectorizers"].reverse(),
    lambda saved: saved["sections"]["IPC 302"].update(weights=saved["sections"]["IPC 302"]["weights"][:-1]),
])
def test_a_damaged_evidence_file_is_named_not_used(damage):
    train = [spanned(i, ("IPC 302",)) for i in range(6)]
    saved = json.loads(EvidenceSelector.fit(train, ("IPC 302",)).to_json())
    damage(saved)
    with pytest.raises(UserError, match="run/evidence.json: not an evidence scorer this release reads"):
        EvidenceSelector.from_json(json.dumps(saved), "run/evidence.json")


def test_json_answers_are_read_item_by_item_and_written_for_training():
    from legalft.data.example import TaskSpec, reasoning_key
    from legalft.llm.label_set_prompts import build_prompts, format_answer, parse_json_answer

    task = TaskSpec("proslex", ("IPC 201", "IPC 302"), True, statutes=True)
    answer = parse_json_answer(
        'Sections: [{"section": "IPC 302", "quote": "He struck him.", "reasoning": "a killing"}, '
        '{"section": "Section 201", "quote": ""}, {"section": "IPC 999"}, "IPC 201", {"quote": "x"}] and more', task)
    assert answer.labels == ["IPC 201", "IPC 302"] and answer.problem is None
    assert answer.quotes == {"IPC 302": "He struck him."} and answer.reasoning == {"IPC 302": "a killing"}
    assert answer.invalid_items == 3  # a section no label has, a bare string, an object without a section
    for text, problem in (("302 and 201", "no JSON list"), ('[{"section": "IPC 302"', "not JSON"),
                          ("[1, 2", "not JSON")):
        assert parse_json_answer(text, task).problem.startswith(problem) and not parse_json_answer(text, task).labels
    example = Example("d", "He struck him. He hid the body.", ("IPC 201", "IPC 302"),
                      {"IPC 302": ("He struck him.",)}, meta={reasoning_key("IPC 302"): "a killing"})
    target = format_answer(example, "json")
    assert json.loads(target) == [{"section": "IPC 201", "quote": "", "reasoning": ""},
                                  {"section": "IPC 302", "quote": "He struck him.", "reasoning": "a killing"}]
    read = parse_json_answer(target, task)
    assert read.labels == ["IPC 201", "IPC 302"] and read.quotes == {"IPC 302": "He struck him."}
    (prompt,), _ = build_prompts(task, [example], [("He hid the body.", "IPC 201")], 100, explain="json")
    assert '"reasoning": "<why>"' in prompt and "separated by commas" not in prompt
    assert 'Sections: [{"section": "IPC 201", "quote": "He hid the body."}]' in prompt  # the demonstration


def test_a_fire_reasoning_trace_is_kept_and_a_generated_reasoning_goes_into_the_submission(tmp_path):
    from legalft.data.example import reasoning_key
    from legalft.data.fire2026 import read_file
    from legalft.reporting.fire2026 import submission_lines

    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"doc_id": "a", "doc_url": "", "fact": "He stabbed her.", "statute": [
        {"section": "Section 302 IPC", "exact_fact": "He stabbed her.", "reasoning_trace": "an intended killing"}]}))
    (example,) = read_file(path, labelled=True, unknown_sections="error")
    assert example.meta[reasoning_key("IPC 302")] == "an intended killing"
    (line,) = submission_lines([{"id": "a", "prediction": ["IPC 302"], "explanations": {"IPC 302": "He stabbed her."},
                                 "evidence": {"IPC 302": ["He stabbed her."]},
                                 "reasoning": {"IPC 302": "she died of the wound"}}], {}, "lora smollm2")
    assert line["statute"][0]["reasoning_trace"] == "she died of the wound"


def test_a_json_explained_run_is_scored_with_its_quotes_reasoning_and_unreadable_answers_counted():
    from omegaconf import OmegaConf

    from legalft.data.example import Task, TaskSpec
    from legalft.llm.prompts import PromptBuilder
    from legalft.llm.scoring import label_sets_incontext

    class Answers:  # an engine that answers from a list, as a model would
        def __init__(self, generations):
            self.generations = generations

        def generate(self, prompts, **kwargs):
            assert len(prompts) == len(self.generations)
            return self.generations

    spec = TaskSpec("proslex", ("IPC 201", "IPC 302"), True, statutes=True)
    test = [Example("a", FACTS, ("IPC 302",), {"IPC 302": ("The accused struck the deceased with an axe.",)}),
            Example("b", FACTS, ("IPC 201",), {"IPC 201": ("The accused then hid the axe in a well.",)})]
    engine = Answers([json.dumps([{"section": "IPC 302", "quote": "struck the deceased with an axe",
                                   "reasoning": "the blow killed him"}]), "IPC 201, I think"])
    ic = OmegaConf.create({"strategy": "zero_shot", "k": 0, "explain": "json", "max_input_words": 100,
                           "max_new_tokens": 64, "batch_size": 2})
    builder = PromptBuilder("zero_shot", max_input_words=100, explain="json")
    scores, records = label_sets_incontext(Task(spec, [], test), engine, ic, False, builder, {"bertscore_model": None})
    scores = scores["proslex"]
    assert [r["prediction"] for r in records] == [["IPC 302"], []]
    assert records[0]["reasoning"] == {"IPC 302": "the blow killed him"} and records[1]["reasoning"] == {}
    assert records[0]["evidence"] == {"IPC 302": ["struck the deceased with an axe"]}
    assert scores["invalid_outputs"] == 1 and scores["invalid_json_items"] == 0
    assert scores["evidence_exact"] == 1 and scores["evidence_sentence_f1"] == 1.0 and scores["explanations"] == 1


def test_the_sentences_a_model_trains_on_are_the_experts_others_as_many_and_the_descriptions():
    from legalft.evaluation.evidence import MAX_EXPERT_SENTENCES, expert_sentences

    document = spanned(1, ("IPC 302", "IPC 420"))
    pairs = expert_sentences(document, ("IPC 302", "IPC 420", "IPC 376"), {"IPC 302": "Punishment for murder",
                                                                          "IPC 376": "Punishment for rape"})
    assert pairs[:2] == [("The accused stabbed the victim to death.", ("IPC 302",)),
                         ("The accused forged the sale deed.", ("IPC 420",))]
    negatives = [text for text, sections in pairs if not sections]
    assert len(negatives) == 2 and all("accused" not in text for text in negatives)
    assert pairs[-1] == ("Punishment for murder", ("IPC 302",))  # its own sections' descriptions, not IPC 376's
    assert expert_sentences(document, ("IPC 302",), {}) == expert_sentences(document, ("IPC 302",), {})  # drawn alike
    long = Example(id="9", text=" ".join(f"The accused hit witness {i} with a stick." for i in range(20)),
                   labels=("IPC 302",), explanations={"IPC 302": tuple(f"The accused hit witness {i} with a stick."
                                                                      for i in range(20))})
    assert len(expert_sentences(long, ("IPC 302",), {})) == MAX_EXPERT_SENTENCES  # and no other sentence left
    assert expert_sentences(Example(id="2", text="No spans.", labels=("IPC 302",)), ("IPC 302",), {}) == []


def test_a_model_trained_on_sentences_names_each_sections_sentences_above_one_half(tiny_tokenizer_dir):
    import torch
    from transformers import AutoTokenizer

    from legalft.models.model_evidence import ModelEvidence

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    marker = tokenizer("stabbed", add_special_tokens=False)["input_ids"][0]

    class SaysStabbing(torch.nn.Module):
        """Reads 'stabbed' as evidence for the first label, nothing as evidence for the second."""

        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(4.0))

        def forward(self, input_ids, attention_mask, chunk_counts):
            assert chunk_counts.tolist() == [1] * len(input_ids)  # each sentence a document of one window
            found = (input_ids == marker).any(dim=1).float() * 2 - 1
            return torch.stack([found * self.scale, torch.full_like(found, -3.0)], dim=1)

    namer = ModelEvidence(SaysStabbing(), tokenizer, ("IPC 302", "IPC 420"), batch_size=2)
    text = ("The hearing was adjourned. The accused stabbed him. The trial court framed the charges. "
            "Later he stabbed the witness too.")
    chosen = namer.select(text, ["IPC 302", "IPC 420", "IPC 999"])
    assert chosen["IPC 302"] == ["The accused stabbed him.", "Later he stabbed the witness too."]
    assert len(chosen["IPC 420"]) == 1 and "IPC 999" not in chosen  # its best one; a label it does not classify
    assert namer.select("", ["IPC 302"]) == {}


def test_a_long_text_is_split_in_segments_and_its_evidence_looked_for_in_its_first_characters():
    """pysbd's time grows faster than its input: a text longer than any real case is split segment by segment
    (each cut after a sentence's end), and evidence is looked for where the classifier reads, the first
    EVIDENCE_CHARS characters."""
    from legalft.data.sentences import SEGMENT_CHARS, WHOLE_TEXT_CHARS, segments, split_sentences
    from legalft.evaluation.evidence import EVIDENCE_CHARS

    short = "He struck her. She fell. " * 10
    assert segments(short) == [short]
    long = "The hearing was adjourned on that day. " * (WHOLE_TEXT_CHARS // 20)
    pieces = segments(long)
    assert "".join(pieces) == long and len(pieces) > 1 and all(len(p) <= SEGMENT_CHARS for p in pieces)
    assert all(p.endswith(". ") for p in pieces[:-1])  # cut after a sentence's end
    assert {s.text for s in split_sentences(long)} == {"The hearing was adjourned on that day."}
    train = [spanned(i, (("IPC 302",), ("IPC 420",))[i % 2]) for i in range(20)]
    selector = EvidenceSelector.fit(train, ("IPC 302", "IPC 420"))
    far = "The hearing was adjourned. " * (EVIDENCE_CHARS // 27 + 10) + "The accused stabbed the victim to death."
    near = "The accused stabbed the victim to death. " + far
    assert selector.select(near, ["IPC 302"])["IPC 302"][0] == "The accused stabbed the victim to death."
    assert "The accused stabbed the victim to death." not in selector.select(far, ["IPC 302"])["IPC 302"]
