"""What the confound views (``circular``, ``blind``, ``calibration``) share, with parts that
``interventions`` and ``accuracy`` use too: the arithmetic (:mod:`.metrics`, :mod:`.calibration`,
:mod:`.paired`), the sections and their checks (:mod:`.record`), the report cells (:mod:`.cells`)
and the plot panels (:mod:`.plot` declares them, :mod:`.panels` draws them).

Nothing is imported here, so that a view imports only the module it needs.
"""
