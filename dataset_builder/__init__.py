"""Raw MM-SpuBench release -> validated records -> Hub-layout Parquet dataset; synthetic twin."""

from mmspubench.dataset_builder.schema import FEATURES, SPURIOUS_TYPES, TYPE_ABBREV, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError

__all__ = ["FEATURES", "SPURIOUS_TYPES", "TYPE_ABBREV", "TYPE_NAMES", "MMSpuBenchError"]
