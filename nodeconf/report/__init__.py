"""Reports of a conformance run: Allure results read back, HTML, categories, environment and exit codes."""
