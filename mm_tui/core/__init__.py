"""What every layer of mm shares, depending on nothing but the standard library: the events the
engine emits and the front ends consume, and small helpers. Nothing here imports the rest of mm."""
