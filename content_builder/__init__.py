"""Render a product website's content as a static, read-only API for AI agents."""
