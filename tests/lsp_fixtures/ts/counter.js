// A JavaScript file beside the TypeScript ones: the same server reads it.

function makeCounter(start) {
  let count = start;
  return function next() {
    count += 1;
    return count;
  };
}

module.exports = { makeCounter };
