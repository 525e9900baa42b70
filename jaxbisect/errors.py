"""The one family of errors a user can cause. The CLI prints them as one line, exit 2."""


class UserError(Exception):
    """Bad input or an unusable situation the user can fix; never a bug."""

    exit_status = 2


class NoNetwork(UserError):
    """PyPI could not be reached and nothing cached can stand in (``cause``: why not)."""

    def __init__(self, message: str, *, cause: str = ""):
        super().__init__(message)
        self.cause = cause


class UnknownRelease(UserError):
    """A version that jax never released (or that is not usable as asked)."""


class InstallFailed(UserError):
    """An environment could not be created for a release."""
