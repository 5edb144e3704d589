"""Torch parts of ELBERT-PO."""
