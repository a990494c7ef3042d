"""Reporting: markdown pages, sections, figures and the HTML preview, from an analysis."""
