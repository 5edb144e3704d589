"""Torch parts of SELLF."""
