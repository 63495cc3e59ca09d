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


class LastOwner(TenantAccessError):
    """The change would leave the tenant with no owner."""

    status = 409


class TooManyInvitations(TenantAccessError):
    """The tenant holds as many pending invitations as it may."""

    status = 409


class InvitationNotFound(TenantAccessError):
    """No such invitation for this user (someone else's looks the same)."""

    status = 404
