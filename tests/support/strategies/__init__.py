"""Hypothesis strategies drawing stack settings from the settings models and the catalog
(``settings``), with the values a type alone does not say (``samples``); docs/property-tests.md."""
