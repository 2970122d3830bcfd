"""Raw MM-SpuBench release -> validated records -> Hub-layout Parquet dataset; synthetic twin."""

from mmspubench.errors import MMSpuBenchError
from mmspubench.dataset_builder.schema import FEATURES, SPURIOUS_TYPES, TYPE_ABBREV, TYPE_NAMES

__all__ = ["FEATURES", "SPURIOUS_TYPES", "TYPE_ABBREV", "TYPE_NAMES", "MMSpuBenchError"]
