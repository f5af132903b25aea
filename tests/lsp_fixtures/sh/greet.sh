#!/bin/bash
# Greetings for people.

GREETING="hello"

greet() {
  echo "$GREETING, $1"
}

farewell() {
  echo "bye, $1"
}
