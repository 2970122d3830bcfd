"""Which differences are real: rank intervals, adjusted p-values, detectable differences and the
clustered bootstrap, over runs on the same items (plain numpy; the conventions of
:mod:`mmspubench.eval.metrics`: percentages, 95% percentile intervals, ``seed``-reproducible).
"""

from mmspubench.eval.analysis.stats.adjust import (
    BH,
    HOLM,
    METHODS,
    adjust,
    adjust_present,
    benjamini_hochberg,
    holm,
)
from mmspubench.eval.analysis.stats.power import mdd_paired, mdd_unpaired, z_sum
from mmspubench.eval.analysis.stats.ranks import (
    RankInterval,
    rank_intervals,
    rank_intervals_by_group,
    tied_groups,
    tied_text,
)
from mmspubench.eval.analysis.stats.resample import (
    bootstrap_p_value,
    cluster_index,
    clustered_ci,
    resampled_means,
)

__all__ = [
    "BH",
    "HOLM",
    "METHODS",
    "RankInterval",
    "adjust",
    "adjust_present",
    "benjamini_hochberg",
    "bootstrap_p_value",
    "cluster_index",
    "clustered_ci",
    "holm",
    "mdd_paired",
    "mdd_unpaired",
    "rank_intervals",
    "rank_intervals_by_group",
    "resampled_means",
    "tied_groups",
    "tied_text",
    "z_sum",
]
