"""The errors of getting and building interpreters, apart so that every module of the
stage can raise them without importing another's work."""


class ProvisionError(Exception):
    """A download or build failed; exit status 3."""


class UsageError(ProvisionError):
    """The command line asked for something that cannot be; exit status 2."""
