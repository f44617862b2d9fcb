"""acquisition."""

__all__: list[str] = []
