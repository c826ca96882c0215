"""The `nodeconf` command line."""
