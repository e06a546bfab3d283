"""The version of plantrail: the one place it is written (the package, the wheel and the logs' headers read it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
