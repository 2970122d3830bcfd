"""MM-SpuBench inside outside harnesses: Inspect AI, lmms-eval and VLMEvalKit, and runs coming back.

Thin adapters over the package's own loader, prompts, parser and metrics:

- ``inspect/task``: the Inspect task ``mmspubench/mm_spubench`` (entry point ``inspect_ai``).
- ``inspect/provider``: the Inspect model provider ``mmspubench/<model>`` (our transformers loader).
- ``inspect/mock``: the offline Inspect provider ``mmspubench-mock/<reply>`` (a smoke test).
- ``inspect/args``: the task's ``-T`` options, checked as ``mmspubench eval``'s flags.
- ``_registry``: what the ``inspect_ai`` entry point loads (``pyproject.toml`` names it, so it stays
  at this path).
- ``lmms_eval/``: the lmms-eval task folder (``mmspubench integrations lmms-eval`` prints it).
- ``vlmevalkit``: the VLMEvalKit MCQ TSV writer (``mmspubench export --format vlmevalkit``).
- ``ingest/``: an Inspect log or lmms-eval samples file -> our run folder (``mmspubench ingest``).

Nothing here is imported by ``mmspubench`` itself; each module imports its harness on use.
"""
