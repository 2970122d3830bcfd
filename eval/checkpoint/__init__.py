"""A Hugging Face checkpoint as the transformers and vLLM backends share it: Hub resolution and safe
weights, processors with family hooks, chat rendering, token encoding with the prefix rule, and
prefix-LM handling."""
