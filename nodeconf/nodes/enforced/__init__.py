"""The driver of a node run by the bundled enforcer (the VM, `local`, `ssh://`): push, start, talk to the agent."""
