"""Tiny LLaVA models made offline: the tokenizer, the one builder, and the trainer of the bundled models.

Not part of a run: ``mmspubench.eval.bundled`` builds its random model through this package, the
tests build their LLaVA with it, and ``python -m mmspubench.eval.tiny.train`` made the shipped weights.
"""
