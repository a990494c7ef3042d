"""Analysing: a stored run as tables (pandas), comparisons between series, findings and their
classes, counts, the 2009 study's figures."""
