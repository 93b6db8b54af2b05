"""Validator for the Slurm smoke-test preset matrix."""

__version__ = "0.1.0"
