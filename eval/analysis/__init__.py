"""Analysis: what reads finished run folders and records (report tables, paired comparisons, figures).

The dependency is one way: these modules read what running wrote (results.json, samples.jsonl,
:mod:`mmspubench.eval.records`); the running modules (runner, records, run folder, metrics,
backends) never import them (tests/test_import_graph.py).
"""
