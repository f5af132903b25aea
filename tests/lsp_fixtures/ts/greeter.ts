// Greetings for people.

export class Person {
  constructor(public name: string) {}

  greet(greeting: string): string {
    return `${greeting}, ${this.name}`;
  }
}

export function makePerson(name: string): Person {
  return new Person(name);
}
