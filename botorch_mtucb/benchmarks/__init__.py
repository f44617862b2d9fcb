"""benchmarks."""

__all__: list[str] = []
