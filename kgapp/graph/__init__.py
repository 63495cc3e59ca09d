"""The graph core: plain Python over SurrealDB, with no Django import.

Everything here takes its configuration as arguments and is bound to one tenant
namespace by whoever calls it (the web edge, a Celery task), never by a global.
"""
