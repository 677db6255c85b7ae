"""What a document classifier's finished run does with its saved model: rescore it on labelled documents
(``evaluate.py run=DIR``) and classify unlabelled ones (``predict.py``), the same windows, fusion and
thresholds as when it was trained; the run folder is read, and only rescoring writes (its results)."""

from __future__ import annotations

from legalft.data.example import Example, TaskSpec
from legalft.methods import fusion
from legalft.methods.base import Classified
from legalft.methods.document_choices import model_named
from legalft.methods.document_steps import build_datamodule, evidence_namer, predict, subset_field
from legalft.runs.context import RunContext


def saved_classifier(method, ctx: RunContext) -> tuple[TaskSpec, object, object]:
    """(task, module, tokenizer) of the run's model; a run without its model is named before any data is read."""
    run = ctx.folder
    run.require(*method.model_file(run))
    task = run.read_task()
    return (task, *method.saved_model(ctx, task))


def on_documents(ctx: RunContext, task: TaskSpec, module, tokenizer, examples: list[Example]):
    """(the datamodule that scores ``examples``, what turns the model's scores into the run's, the results' fusion
    fields)."""
    datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, [], [], examples)
    if not ctx.folder.fusion.exists():
        return datamodule, None, {}
    return (datamodule, *fusion.rescoring_fusion(ctx, task.labels, examples))


def classify(method, ctx: RunContext, examples: list[Example]) -> Classified:
    task, module, tokenizer = saved_classifier(method, ctx)
    datamodule, fuse, _ = on_documents(ctx, task, module, tokenizer, examples)
    scores = predict(module, datamodule, "test")
    if fuse is not None:
        scores = fuse(examples, scores)
    run = ctx.folder
    evidence = evidence_namer(method.evidence_from, module, tokenizer, task, run)
    return Classified(task, scores, run.read_thresholds(task.labels), evidence)


def rescore(method, ctx: RunContext) -> dict:
    from legalft.evaluation import run_results

    run = ctx.folder
    task, module, tokenizer = saved_classifier(method, ctx)
    (scored,) = ctx.test_tasks()
    test = scored.test
    overlap = run.flag_overlap([(scored.spec, test)])
    datamodule, fuse, fields = on_documents(ctx, task, module, tokenizer, test)
    model = run_results.recorded_model(run.path, str(ctx.model.pretrained))
    if fields:  # what predicted, from the model's name as the run recorded it (or its config gives it)
        model = model_named(model.removesuffix("+tfidf_logreg"), fields)
    return method.score(ctx, module, datamodule, test, task, fuse, model=model, **method.run_fields(ctx), **overlap,
                        **subset_field(ctx), **fields, **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}))
