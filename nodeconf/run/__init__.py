"""A run of the suites: its options declared once, its nodes (--node or a matrix file) and the settings each
node runs by, resolved once per process (issue 27 item 1)."""
