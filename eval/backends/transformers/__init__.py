"""The transformers backend: the adapter, its loader and its scorers (plain and fast)."""
