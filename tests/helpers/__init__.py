"""Helpers every test folder shares: run folders, an offline Hub cache, model identities."""
