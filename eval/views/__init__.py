"""The views of a run, one room: each ``--metrics`` name is one module declaring a
:class:`~mmspubench.eval.views.plugin.View`, and :mod:`~mmspubench.eval.views.registry` lists them.

- ``accuracy``, ``cgla``: the paper's two (the runner's own passes: the published question, the
  CGL conditions); their modules declare the sections.
- ``circular``, ``blind``, ``calibration``: the confound views (letter bias, text prior,
  calibration), with their arithmetic in ``metrics_confounds``, ``metrics_calibration`` and
  ``metrics_paired`` and their record checks in ``results_confounds``.
- ``interventions``: the item asked again with its image changed; its changed images in
  ``intervention_asks``, its figures in ``metrics_interventions``, its checks in
  ``results_interventions``.

``cells`` and ``confound_plots`` hold what the views' report columns and plots share.
"""
