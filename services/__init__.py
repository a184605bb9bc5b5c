"""The four services; each is run as ``python -m services.<name>``."""
