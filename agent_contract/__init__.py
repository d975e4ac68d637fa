"""The API contract: paths, route rules and headers, published models, the endpoint table,
the build manifest. No I/O; imports nothing else of the project."""
