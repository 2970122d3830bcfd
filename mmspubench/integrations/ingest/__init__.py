"""A finished harness run (an Inspect log, an lmms-eval samples file) -> our run folder.

- ``sources``: the readers of the harnesses' files -> ``HarnessRun``.
- ``run``: every answer read again by our parser, the harness's figures checked, the folder written.
- ``interventions``: what an intervened sample showed, and its figures.
"""
