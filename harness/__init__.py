"""What tests and benchmarks share to run the product: the scripted OpenAI-compatible
model server, recorded model answers, worker and cluster processes, and the resolution
evaluation. Not part of the product (pyproject.toml packages only kgapp and tenants)."""
