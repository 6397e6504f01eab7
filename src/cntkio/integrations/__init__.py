"""Bridges from cntkio to other libraries (``cntkio.integrations.torch``); each imports its
library only when it is imported itself."""
