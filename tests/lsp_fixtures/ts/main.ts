import { Person, makePerson } from "./greeter";

// makePerson builds a Person; greet says hello
export function main(): string[] {
  const alice = makePerson("alice");
  const bob = new Person("bob");
  return [alice.greet("hello"), bob.greet("hi")];
}
