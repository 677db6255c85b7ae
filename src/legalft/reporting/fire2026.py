"""``report.py report=fire2026``: one run's predictions and evidence as a FIRE 2026 Task 1 submission, one JSON
line per case, sections spelt as the organisers spell them:
``{"doc_id", "statute": [{"section": "IPC 376", "exact_fact", "reasoning_trace"}]}``.

``exact_fact`` is the run's evidence for the section (``predictions.jsonl``'s ``evidence``: the sentences the
evidence scorer calls evidence for a classifier run, the generated quote for a generative one), each sentence a
verbatim quote of the facts (with the organisers' test file given, a quote the facts do not hold word for word, such
as a generated one, is aligned to them or left out); ``reasoning_trace`` says what named the section and on what
score. The file is validated before it is put in place (against the test file's doc_ids too, when given), so it is
written whole or not at all; ``predict.py
format=fire2026`` writes the same lines for a test file, and ``legalft-fire2026 validate FILE [--test TEST]``
validates any submission file. Sections spelt ``Section 376 IPC`` (this project's earlier spelling) are valid too."""

from __future__ import annotations

import json
import re
from pathlib import Path

from legalft.data.fire2026 import section_text
from legalft.foundation.errors import UserError

SECTION = re.compile(r"^(?:IPC \d+[A-Z]*|Section \d+[A-Z]* IPC)$")
KEYS = {"doc_id", "statute"}
STATUTE_KEYS = {"section", "exact_fact", "reasoning_trace"}


def reasoning(record: dict, label: str, description: str, run_name: str) -> str:
    """The model's own reasoning where it wrote one (``prompt.explain=json``), else what named the section."""
    if (record.get("reasoning") or {}).get(label):
        return record["reasoning"][label]
    what = f"{section_text(label)}{f' ({description})' if description else ''}"
    score = (record.get("scores") or {}).get(label)
    if score is not None:
        return (f"{run_name} gives {what} a score of {score:.2f}, at or above its decision threshold; the quoted "
                "sentences are those of the facts that a scorer trained on experts' evidence calls evidence for it.")
    if record.get("explanations", {}).get(label):
        return f"{run_name} names {what} and quotes this passage of the facts as its evidence."
    return f"{run_name} names {what}; it gave no evidence for it."


def exact_fact(quotes, facts: str | None) -> str:
    """A section's evidence as one ``exact_fact``: its quotes joined by spaces, each aligned to the case's facts
    where they are known (a generated quote the facts do not hold is left out; ``legalft.data.noise.align_span``)."""
    from legalft.data.noise import align_span

    quotes = [quotes] if isinstance(quotes, str) else list(quotes or ())
    if facts is not None:
        quotes = [text for text in (align_span(quote, facts)[1] for quote in quotes) if text]
    return " ".join(quotes)


def submission_lines(records: list[dict], descriptions: dict[str, str], run_name: str,
                     facts: dict[str, str] | None = None) -> list[dict]:
    """The records as submission lines; ``facts``: the test cases' facts by doc_id, which every quote is made to
    quote verbatim."""
    lines = []
    for record in records:
        predicted = record["prediction"]
        if not isinstance(predicted, list):
            raise UserError(f"case {record['id']!r}: the run predicts one label ({predicted!r}), not a set of statutes: "
                            "a FIRE 2026 submission comes from a multi-label statute run (data=fire2026 or proslex).")
        evidence = record.get("evidence") or {}
        case_facts = None if facts is None else facts.get(str(record["id"]), "")
        lines.append({"doc_id": record["id"], "statute": [
            {"section": section_text(label), "exact_fact": exact_fact(evidence.get(label), case_facts),
             "reasoning_trace": reasoning(record, label, descriptions.get(label, ""), run_name)}
            for label in predicted]})
    return lines


def validation_problems(lines: list[tuple[int, object]], test_ids=None) -> list[str]:
    """What keeps ``(line number, parsed line)`` pairs from being a submission, at most 10; [] when none.
    ``test_ids``: the test file's doc_ids, which the lines must cover exactly."""
    problems, seen = [], set()
    for number, line in lines:
        where = f"line {number}"
        if not isinstance(line, dict) or set(line) != KEYS:
            problems.append(f"{where}: an object with exactly {sorted(KEYS)} is expected")
            continue
        if not isinstance(line["doc_id"], str) or not line["doc_id"]:
            problems.append(f"{where}: doc_id must be non-empty text")
        elif line["doc_id"] in seen:
            problems.append(f"{where}: doc_id {line['doc_id']!r} appears twice")
        seen.add(line["doc_id"])
        statutes = line["statute"]
        if not isinstance(statutes, list):
            problems.append(f"{where}: statute must be a list")
            continue
        for i, statute in enumerate(statutes, 1):
            if not isinstance(statute, dict) or set(statute) != STATUTE_KEYS:
                problems.append(f"{where}, statute {i}: an object with exactly {sorted(STATUTE_KEYS)} is expected")
            elif not isinstance(statute["section"], str) or not SECTION.match(statute["section"]):
                problems.append(f"{where}, statute {i}: section {statute['section']!r} is not 'IPC <n>'")
            elif not all(isinstance(statute[k], str) for k in ("exact_fact", "reasoning_trace")):
                problems.append(f"{where}, statute {i}: exact_fact and reasoning_trace must be text")
        if len({s.get("section") for s in statutes if isinstance(s, dict)}) < len(statutes):
            problems.append(f"{where}: a section is listed twice")
    if test_ids is not None:
        missing, extra = sorted(set(test_ids) - seen), sorted(seen - set(test_ids))
        if missing:
            problems.append(f"{len(missing)} test case(s) missing, e.g. {missing[:3]}")
        if extra:
            problems.append(f"{len(extra)} doc_id(s) that the test file does not hold, e.g. {extra[:3]}")
    return problems[:10]


def test_facts_of(test_path: str) -> dict[str, str]:
    """The organisers' test file's facts by doc_id."""
    from legalft.data.table_files import numbered_json_lines

    if not Path(test_path).is_file():
        raise UserError(f"report.test_path={test_path}: no such file. Give the organisers' test file (JSON Lines with "
                        "doc_id and fact), or leave report.test_path out to skip checking the submission against it.")
    return {str(row.get("doc_id")): str(row.get("fact", "")) for _, row in numbered_json_lines(Path(test_path))}


def validate_file(path: Path, test_path: str | None = None) -> int:
    """The number of cases of a valid submission file; a UserError naming the first problems otherwise."""
    from legalft.data.table_files import numbered_json_lines

    lines = numbered_json_lines(path)
    problems = validation_problems(lines, test_facts_of(test_path) if test_path else None)
    if problems:
        raise UserError(f"{path} is not a FIRE 2026 Task 1 submission: {'; '.join(problems)}.")
    return len(lines)


def write_submission(cfg) -> Path:
    from omegaconf import OmegaConf

    from legalft.foundation.io import atomic_write_text, make_folders
    from legalft.reporting.runs import find_runs, read_run
    from legalft.runs.folder import RunFolder

    if not cfg.runs or not cfg.out:
        raise UserError("report=fire2026 needs runs=<one run folder> and out=<submission file>.")
    pattern = OmegaConf.to_container(cfg.runs) if OmegaConf.is_list(cfg.runs) else cfg.runs
    folders, _ = find_runs(pattern)
    if len(folders) != 1:
        raise UserError(f"runs={pattern!r} matches {len(folders)} scored run folders: a submission is one run's; "
                        "name one folder.")
    out = Path(cfg.out)
    if out.exists():
        raise UserError(f"out={out} exists: choose a new file (nothing is overwritten).")
    run = read_run(folders[0])
    if len(run.predictions) != 1:
        raise UserError(f"{run.path} scored {len(run.predictions)} tasks: a submission is one statute task's.")
    (records,) = run.predictions.values()
    folder = RunFolder(run.path)
    descriptions = folder.read_task().label_descriptions if folder.label_map.exists() else {}
    run_name = f"{run.info.get('method', 'the run')} {run.info.get('model', '')}".strip()
    test_path = cfg.report.get("test_path")
    facts = test_facts_of(test_path) if test_path else None
    lines = submission_lines(records, descriptions, run_name, facts)
    problems = validation_problems(list(enumerate(lines, 1)), facts)
    if problems:
        raise UserError(f"the submission from {run.path} would not validate: {'; '.join(problems)}.")
    make_folders(out.parent)
    atomic_write_text(out, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    unexplained = sum(not s["exact_fact"] for line in lines for s in line["statute"])
    if unexplained:
        print(f"note: {unexplained} predicted section(s) have no evidence (exact_fact is empty): the run gave none")
    return out
