"""The MCP server of a tenant's graph: `/mcp/t/<slug>/`, streamable HTTP (stateless).

- `door.py`: the ASGI door in front of Django; it authenticates the API token and
  resolves the tenant before any MCP handling (401, 404 as the API answers them).
- `server.py`: the tools, registered on the SDK's `MCPServer`.
- `reads.py`, `writes.py`: the tools, each calling the functions the REST routers call.
- `calls.py`: what every tool shares: the caller, role checks, argument validation
  through the API's schemas, errors a model can act on, the answer's shape.
- `text.py`: records as the short lines a model reads.
"""

from kgapp.web.mcp.door import with_mcp

__all__ = ["with_mcp"]
