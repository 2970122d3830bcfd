"""``mmspubench compare``: paired figures of two finished runs on the same items.

cli (the command, its JSON and Markdown), runs (reading the two run folders, each side's answers,
the paired items), side_intervention (a side seen under one of its run's interventions), paired
(paired rates and means, per-group comparison), confounds and interventions (their paired figures).
"""
