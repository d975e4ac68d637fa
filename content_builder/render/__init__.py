"""Renderers: one module per endpoint family, all pure functions of (Site, Catalog)."""
