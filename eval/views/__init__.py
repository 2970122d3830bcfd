"""The views of a run, one room: each ``--metrics`` name is one package declaring a
:class:`~mmspubench.eval.views.plugin.View` (its ``VIEW``), and
:mod:`~mmspubench.eval.views.registry` lists them.

- ``accuracy``, ``cgla``: the paper's two (the runner's own passes: the published question, the
  CGL conditions); their packages declare the sections.
- ``circular``, ``blind``, ``calibration``: the confound views (letter bias, text prior,
  calibration).
- ``interventions``: the item asked again with its image changed; its changed images in
  ``interventions.images``, its figures in ``interventions.arithmetic``, its section and checks in
  ``interventions.record``, its report tables and plot panels in ``interventions.report`` and
  ``interventions.panels``.

``confounds`` holds what several views share: the confound arithmetic (``metrics``,
``calibration``, ``paired``), their sections and checks (``record``), the report cells (``cells``)
and the confound plot panels (``plot``, ``panels``).
"""
