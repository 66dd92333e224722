"""Messages of elastic mode that users' tooling matches (upstream's wording)."""

RESET_LIMIT_EXCEEDED_MESSAGE = ("Horovod was shutdown because number of resets during elastic job "
                                "exceeded limit: {}")
