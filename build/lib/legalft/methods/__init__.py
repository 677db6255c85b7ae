"""The methods a run can use, each behind one class: ``conf/method/<name>.yaml`` names it, train.py
and evaluate.py build it, and a run folder records its name so rescoring finds it again."""
