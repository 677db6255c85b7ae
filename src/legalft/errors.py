"""The one exception type that reaches users as a message instead of a traceback."""


class UserError(Exception):
    """Bad input a user can fix: the message names the file or config key and what to do."""
