"""Why a request for a tenant was refused; each maps to one HTTP status at the edge."""


class TenantAccessError(Exception):
    status = 403


class InvalidSlug(TenantAccessError):
    status = 400


class TenantNotFound(TenantAccessError):
    """Unknown tenant, or one the user is not a member of: the two look the same."""

    status = 404


class RoleRequired(TenantAccessError):
    status = 403
