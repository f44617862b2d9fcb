"""features."""

__all__: list[str] = []
