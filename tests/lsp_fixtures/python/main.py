from greeter import Person, make_person


# make_person builds a Person; greet says hello
def main() -> None:
    alice = make_person("alice")
    print(alice.greet("hello"))
    bob = Person("bob")
    print(bob.greet("hi"))
