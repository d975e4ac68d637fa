"""The front door: `agent-access build|check|serve|verify|mcp|search-eval`, above every party."""
