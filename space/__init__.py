"""The MM-SpuBench Gradio Space: explorer, per-sample CGLA, live runs, leaderboard, submission."""
