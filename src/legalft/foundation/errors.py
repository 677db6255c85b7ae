"""The one exception type that reaches users as a message instead of a traceback, and the exit
status that goes with it."""

EXIT_BAD_INPUT = 2  # what every entry point exits with on a UserError


class UserError(Exception):
    """Bad input a user can fix: the message names the file or config key and what to do."""
