"""Leaderboard submission (``mmspubench submit``): a run checked against itself and the published
split, its figures recomputed, and the Hub entries written or opened as pull requests.

The Space's Submit tab and leaderboard, and the sweep's verification of fetched runs, import these
checks; nothing here imports the Space.
"""
