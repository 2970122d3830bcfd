"""The benchmark inside Inspect AI: the task ``mmspubench/mm_spubench``, its options and the providers.

- ``task``: the task, its samples and its scorer (the views and interventions it adds: ``views``,
  ``interventions``).
- ``args``: the task's ``-T`` options, checked as ``mmspubench eval``'s flags.
- ``provider``: the model provider ``mmspubench/<model>`` (our transformers loader).
- ``mock``: the offline provider ``mmspubench-mock/<reply>`` (a smoke test).
- ``replies``: a reply read as eval reads one (its reasoning apart; the solver and ingest share it).

Inspect loads them through ``mmspubench.integrations._registry`` (the ``inspect_ai`` entry point).
The package's name is the harness's; it never hides the standard library's ``inspect``, which is
imported by absolute name everywhere.
"""
