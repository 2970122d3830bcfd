"""What the transformers and vLLM backends share: Hub resolution and safe weights, processors with
family hooks, chat rendering, token encoding with the prefix rule, and prefix-LM handling."""
