"""Greetings for people."""


class Person:
    """Someone to greet."""

    def __init__(self, name: str) -> None:
        self.name = name

    def greet(self, greeting: str) -> str:
        """Return the greeting for this person."""
        return f"{greeting}, {self.name}"


def make_person(name: str) -> Person:
    """A new Person called name."""
    return Person(name)
