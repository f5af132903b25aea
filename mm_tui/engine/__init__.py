"""The engine: the turn, the model client, sessions, the context window, guards."""
