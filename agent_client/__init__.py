"""The agent side: a dependency-free client for any deployment, and `verify`, which checks
a live deployment against the contract with that client."""
